// LazyScaler: the golden burst scenario (scale out only once the window holds phi_out high
// samples, scale in after more than phi_in low ones), scale to and from zero, the reset option,
// monotonicity in load over random windows, and the kept counts against a full recount.
#include "core/dilu/lazy_scaler.h"

#include <random>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace sluice::core {
namespace {

const absl::Time kT0 = absl::UnixEpoch();

LoadSample At(int second, double rps, int instances, double cap = 10) {
  return LoadSample{kT0 + absl::Seconds(second), rps, instances, cap, 0};
}

std::unique_ptr<LazyScaler> Make(LazyScalerConfig c = {}) {
  return *LazyScaler::Create(c);
}

TEST(LazyScalerTest, GoldenBurstScalesOutOnlyAfterTwentyHighSamples) {
  auto s = Make();
  // Capacity 10 rps per instance, one instance. 40 s at 5 rps: nothing happens.
  for (int t = 0; t < 40; ++t) {
    s->Observe(At(t, 5, 1));
    ASSERT_EQ(s->Desired(kT0 + absl::Seconds(t)), 1) << "t=" << t;
  }
  // Burst at 15 rps > 1 x 10 from t = 40: the k-th burst sample makes k high samples; the
  // decision waits for the 20th (t = 59), never before.
  for (int t = 40; t < 60; ++t) {
    s->Observe(At(t, 15, 1));
    EXPECT_EQ(s->high_samples(), t - 39);
    ASSERT_EQ(s->Desired(kT0 + absl::Seconds(t)), t < 59 ? 1 : 2) << "t=" << t;
  }
  // The second instance is deployed (n = 2) and the load falls to 5 rps < (2 - 1) x 10.
  // Window at t = 60 + k is [21 + k, 60 + k]: for k <= 18 it holds 19 - k old 5-rps samples plus
  // k + 1 new ones = 20 low samples; at t = 90 it is [51, 90]: 9 burst samples and 31 low ones
  // (t = 60..90), the first count > 30 -> scale in.
  for (int t = 60; t <= 90; ++t) {
    s->Observe(At(t, 5, 2));
    ASSERT_EQ(s->Desired(kT0 + absl::Seconds(t)), t < 90 ? 2 : 1) << "t=" << t;
  }
  EXPECT_EQ(s->low_samples(), 31);
}

TEST(LazyScalerTest, OldHighSamplesDoNotScaleOutTwice) {
  auto s = Make();
  for (int t = 0; t < 20; ++t)
    s->Observe(At(t, 15, 1));
  ASSERT_EQ(s->Desired(kT0), 2);
  // With two instances the same 15 rps is below 2 x 10: no further scale-out.
  for (int t = 20; t < 60; ++t) {
    s->Observe(At(t, 15, 2));
    ASSERT_EQ(s->Desired(kT0), 2) << "t=" << t;
  }
}

TEST(LazyScalerTest, ResetWindowOptionStartsCountingAfresh) {
  LazyScalerConfig c;
  c.reset_window_on_scale = true;
  auto s = Make(c);
  for (int t = 0; t < 20; ++t)
    s->Observe(At(t, 25, 1));
  EXPECT_EQ(s->Desired(kT0), 2);
  EXPECT_EQ(s->window_size(), 0);
  // 25 rps > 2 x 10 again: 20 fresh samples needed (kept mode would count the old ones).
  for (int t = 20; t < 40; ++t) {
    s->Observe(At(t, 25, 2));
    ASSERT_EQ(s->Desired(kT0), t < 39 ? 2 : 3) << "t=" << t;
  }
}

TEST(LazyScalerTest, ScalesToZeroOnlyWhenAllowedAndBackAtOnce) {
  LazyScalerConfig c;
  c.min_instances = 0;
  auto s = Make(c);
  for (int t = 0; t <= 30; ++t) {
    s->Observe(At(t, 0, 1));
    ASSERT_EQ(s->Desired(kT0), t < 30 ? 1 : 0) << "t=" << t;  // 31 idle samples > 30
  }
  s->Observe(At(31, 0, 0));
  EXPECT_EQ(s->Desired(kT0), 0);
  s->Observe(At(32, 0.5, 0));
  EXPECT_EQ(s->Desired(kT0), 1);
  auto keep_one = Make();  // default min 1
  for (int t = 0; t < 60; ++t)
    keep_one->Observe(At(t, 0, 1));
  EXPECT_EQ(keep_one->Desired(kT0), 1);
}

TEST(LazyScalerTest, ClampsAndUnknownCapacity) {
  LazyScalerConfig c;
  c.max_instances = 2;
  auto s = Make(c);
  for (int t = 0; t < 40; ++t)
    s->Observe(At(t, 100, 2));
  EXPECT_EQ(s->Desired(kT0), 2);
  auto u = Make();
  for (int t = 0; t < 40; ++t)
    u->Observe(At(t, 100, 3, 0));  // no capacity anywhere
  EXPECT_EQ(u->Desired(kT0), 3);
  c = {};
  c.capacity_rps = 10;  // config fallback
  auto f = Make(c);
  for (int t = 0; t < 20; ++t)
    f->Observe(At(t, 100, 3, 0));
  EXPECT_EQ(f->Desired(kT0), 4);
  EXPECT_FALSE(LazyScaler::Create({.min_instances = 3, .max_instances = 2}).ok());
}

TEST(LazyScalerTest, DesiredIsMonotoneInLoad) {
  for (uint64_t seed = 1; seed <= 500; ++seed) {
    std::mt19937_64 rng(seed);
    std::uniform_real_distribution<double> rps(0, 60), boost(0, 20);
    LazyScalerConfig c;
    c.min_instances = std::uniform_int_distribution<int>(0, 2)(rng);
    auto lo = Make(c), hi = Make(c);
    for (int t = 0; t < 120; ++t) {
      const int n = std::uniform_int_distribution<int>(0, 5)(rng);  // same n for both
      const double x = rps(rng);
      lo->Observe(At(t, x, n));
      hi->Observe(At(t, x + boost(rng), n));
      ASSERT_GE(hi->Desired(kT0), lo->Desired(kT0)) << "seed=" << seed << " t=" << t;
    }
  }
}

// Property: the counts kept as samples enter and leave (recounted only when n or the capacity
// changes) equal a full recount of the window at every sample, over random loads, instance
// counts, capacities (some unknown), irregular sample times and both window options.
TEST(LazyScalerTest, KeptCountsEqualAFullRecountOfTheWindow) {
  std::mt19937 rng(13);
  for (int trial = 0; trial < 200; ++trial) {
    LazyScalerConfig c;
    c.reset_window_on_scale = trial % 4 == 0;
    c.min_instances = 0;
    auto s = Make(c);
    std::vector<std::pair<absl::Time, double>> window;  // the reference window
    absl::Time t = kT0;
    int n = 1;
    for (int k = 0; k < 300; ++k) {
      t += absl::Milliseconds(std::uniform_int_distribution<int>(200, 3000)(rng));
      if (rng() % 10 == 0)
        n = std::uniform_int_distribution<int>(0, 4)(rng);
      const double cap = rng() % 25 == 0 ? 0.0 : (rng() % 2 == 0 ? 10.0 : 7.5);
      const double rps = rng() % 5 == 0 ? 0.0 : std::uniform_real_distribution<>(0, 45)(rng);
      s->Observe(LoadSample{t, rps, n, cap, 0});
      std::erase_if(window, [&](const auto& p) { return p.first <= t - c.window; });
      window.emplace_back(t, rps);
      int high = 0, low = 0;
      if (n > 0 && cap > 0) {
        for (const auto& [at, r] : window) {
          high += r > n * cap ? 1 : 0;
          low += r < (n - 1) * cap || (n == 1 && r <= 0) ? 1 : 0;
        }
      }
      ASSERT_EQ(s->high_samples(), high) << "trial " << trial << " sample " << k;
      ASSERT_EQ(s->low_samples(), low) << "trial " << trial << " sample " << k;
      const int target = high >= c.phi_out ? n + 1 : (low > c.phi_in ? n - 1 : n);
      if (c.reset_window_on_scale && n > 0 && cap > 0 && target != n)
        window.clear();
      ASSERT_EQ(s->window_size(), static_cast<int>(window.size()));
    }
  }
}

// Property: after SamplesWithoutDecision(n) = k, no k samples of any load change the decision
// (the driver keeps n meanwhile, as a batching driver does).
TEST(LazyScalerTest, SamplesWithoutDecisionHoldWhateverTheLoad) {
  std::mt19937 rng(5);
  int promises = 0;
  for (int trial = 0; trial < 50; ++trial) {
    auto s = Make();
    int n = 1, left = 0;
    for (int t = 0; t < 2000; ++t) {
      const double rps = std::uniform_real_distribution<>(0, 10.0 * (n + 1))(rng);
      s->Observe(At(t, rps, n));
      const absl::Time now = kT0 + absl::Seconds(t);
      if (left > 0) {
        --left;
        ASSERT_EQ(s->Desired(now), n) << "trial " << trial << " t=" << t;
        continue;
      }
      n = s->Desired(now);
      left = s->SamplesWithoutDecision(now, absl::Seconds(1), n);
      promises += left > 0 ? 1 : 0;
    }
  }
  EXPECT_GT(promises, 1000);
}

}  // namespace
}  // namespace sluice::core
