// TailScaler: busy functions follow the lazy scaler; idle ones park after park_after, stay
// resident until the keep-alive (fixed, or the idle-time histogram's tail), pre-warm at the
// histogram's head, are never demoted early when a cached cold start would miss the SLO, and keep
// their promise of samples without a decision (SamplesWithoutDecision) over random loads.
#include "core/longtail/tail_scaler.h"

#include <random>

#include "gtest/gtest.h"

namespace sluice::core {
namespace {

const absl::Time kT0 = absl::UnixEpoch();

std::unique_ptr<TailScaler> Make(TailScalerConfig c) {
  c.lazy.min_instances = 0;
  c.lazy.capacity_rps = 10;
  auto s = TailScaler::Create(c);
  EXPECT_TRUE(s.ok()) << s.status();
  return std::move(*s);
}

LoadSample At(absl::Duration t, double rps, int instances) {
  return LoadSample{kT0 + t, rps, instances, 10, 0};
}

TEST(TailScalerTest, StartsAtZeroAndWakesOnTheFirstArrival) {
  auto s = Make({});
  EXPECT_EQ(s->Desired(kT0), 0);
  EXPECT_EQ(s->NextWakeup(), absl::InfiniteFuture());
  s->Observe(At(absl::Seconds(1), 1, 0));
  EXPECT_EQ(s->Desired(kT0 + absl::Seconds(1)), 1);
  EXPECT_EQ(s->ActiveWanted(kT0 + absl::Seconds(1)), 1);
}

TEST(TailScalerTest, ParksAfterParkAfterAndDemotesAfterKeepAlive) {
  TailScalerConfig c;
  c.park_after = absl::Seconds(10);
  c.keep_alive = absl::Seconds(300);
  auto s = Make(c);
  s->Observe(At(absl::Seconds(1), 1, 0));
  const absl::Time last = kT0 + absl::Seconds(1);
  EXPECT_EQ(s->NextWakeup(), last + absl::Seconds(10));  // park
  EXPECT_EQ(s->ActiveWanted(last + absl::Seconds(9)), 1);
  EXPECT_EQ(s->ActiveWanted(last + absl::Seconds(10)), 0);  // parked
  EXPECT_EQ(s->Desired(last + absl::Seconds(10)), 1);       // still resident
  EXPECT_EQ(s->Desired(last + absl::Seconds(299)), 1);
  EXPECT_EQ(s->Desired(last + absl::Seconds(300)), 0);  // demoted to the host cache
}

TEST(TailScalerTest, SlowCachedStartsStayResidentLonger) {
  TailScalerConfig c;
  c.keep_alive = absl::Seconds(300);
  c.slow_keep_alive = absl::Hours(2);
  c.cached_start_fits_slo = false;
  auto s = Make(c);
  s->Observe(At(absl::Seconds(1), 1, 0));
  EXPECT_EQ(s->Desired(kT0 + absl::Hours(1)), 1);
  EXPECT_EQ(s->Desired(kT0 + absl::Seconds(1) + absl::Hours(2)), 0);
}

TEST(TailScalerTest, PeriodicArrivalsPreWarmBeforeTheNextOne) {
  TailScalerConfig c;  // 1-minute bins, p5 / p99, 10 % margin
  c.keep_alive = absl::Seconds(30);
  auto s = Make(c);
  // A timer every 10 minutes: after 12 uses the histogram is representative.
  absl::Duration t = absl::Seconds(1);
  for (int i = 0; i < 12; ++i, t += absl::Minutes(10))
    s->Observe(At(t, 1, i == 0 ? 0 : 1));
  const absl::Time last = kT0 + t - absl::Minutes(10);
  ASSERT_TRUE(s->histogram().Windows().representative);
  EXPECT_EQ(s->NextWakeup(), last + absl::Seconds(10));  // park
  // Head: bin [10, 11) min -> 10 min x 0.9 = 9 min; tail 11 min x 1.1 = 12.1 min.
  EXPECT_EQ(s->Desired(last + absl::Minutes(5)), 0);  // unloaded between uses
  EXPECT_EQ(s->Desired(last + absl::Minutes(9)), 1);  // pre-warmed, parked
  EXPECT_EQ(s->ActiveWanted(last + absl::Minutes(9)), 0);
  EXPECT_EQ(s->Desired(last + absl::Seconds(726)), 0);  // past 12.1 min
}

TEST(TailScalerTest, BusyFunctionsScaleLikeDilu) {
  auto s = Make({});
  for (int i = 1; i <= 25; ++i)
    s->Observe(At(absl::Seconds(i), 25, 1));  // 2.5x one instance's capacity
  EXPECT_EQ(s->Desired(kT0 + absl::Seconds(25)), 2);
  EXPECT_EQ(s->ActiveWanted(kT0 + absl::Seconds(25)), 2);
}

TEST(TailScalerTest, QuietSamplesAreSkippableOutsideTheLazyWindow) {
  auto s = Make({});
  EXPECT_TRUE(s->QuietSampleIsNoOp(kT0));  // nothing seen yet
  s->Observe(At(absl::Seconds(1), 1, 0));
  EXPECT_FALSE(s->QuietSampleIsNoOp(kT0 + absl::Seconds(40)));
  EXPECT_TRUE(s->QuietSampleIsNoOp(kT0 + absl::Seconds(41)));
  // A reconciliation at the park time moves NextWakeup on to the lazy window's end.
  EXPECT_EQ(s->NextWakeup(), kT0 + absl::Seconds(11));
  EXPECT_EQ(s->ActiveWanted(kT0 + absl::Seconds(11)), 0);
  EXPECT_EQ(s->NextWakeup(), kT0 + absl::Seconds(41));
  EXPECT_EQ(s->Desired(kT0 + absl::Seconds(41)), 1);
  EXPECT_EQ(s->NextWakeup(), kT0 + absl::Seconds(301));  // the keep-alive
}

TEST(TailScalerTest, RejectsNegativeDurations) {
  TailScalerConfig c;
  c.park_after = absl::Seconds(-1);
  EXPECT_FALSE(TailScaler::Create(c).ok());
}

// Property (the promise a batching driver relies on): whenever SamplesWithoutDecision(t, 1 s, n)
// returns k, the next k samples, whatever their load, leave Desired and ActiveWanted at n and
// bring no wake-up into (t, t + k s]. The driver here deploys what Desired says at each sample,
// except while a promise runs (as the engine). Loads alternate idle, light, near-capacity and
// overload phases so that both thresholds, parking and the tiers are crossed.
TEST(TailScalerTest, SamplesWithoutDecisionAreKeptWhateverTheLoad) {
  std::mt19937 rng(7);
  const double rates[] = {0, 3, 9.5, 30};
  int promises = 0;
  for (int trial = 0; trial < 40; ++trial) {
    TailScalerConfig c;
    c.park_after = absl::Seconds(trial % 2 == 0 ? 10 : 25);
    auto s = Make(c);
    int n = 0, left = 0;
    absl::Time until;
    double rate = 0;
    for (int sec = 1; sec <= 1500; ++sec) {
      if (rng() % 60 == 0)
        rate = rates[rng() % 4];
      const double rps = rate == 0 ? 0.0 : std::poisson_distribution<int>(rate)(rng);
      const absl::Time t = kT0 + absl::Seconds(sec);
      s->Observe(LoadSample{t, rps, n, 10, 0});
      if (left > 0) {
        --left;
        ASSERT_EQ(s->Desired(t), n) << "trial " << trial << " t=" << sec;
        ASSERT_EQ(s->ActiveWanted(t), n) << "trial " << trial << " t=" << sec;
        const absl::Time next = s->NextWakeup();
        ASSERT_TRUE(next > until || next <= t) << "trial " << trial << " t=" << sec;
        continue;
      }
      n = s->Desired(t);
      const int k = s->SamplesWithoutDecision(t, absl::Seconds(1), n);
      if (k > 0) {
        ++promises;
        EXPECT_EQ(s->ActiveWanted(t), n);
        left = k;
        until = t + absl::Seconds(k);
      }
    }
  }
  EXPECT_GT(promises, 500);  // the property was exercised
}

// Property (the refined promise): a driver that knows each coming sample's load holds samples
// back while PromiseSamples allows them (j <= quiet_first, or within quiet_run of an earlier
// active one; fewer highs and lows than the budgets) and then observes them in order: Desired
// and ActiveWanted stay at n at each, and a wake-up that was due among them finds Desired and
// ActiveWanted unchanged once the samples before it are in.
TEST(TailScalerTest, RefinedPromiseIsKeptWhenTheDriverKnowsTheLoad) {
  std::mt19937 rng(17);
  const double rates[] = {0, 0.3, 3, 9.5, 30};
  int extended = 0;
  for (int trial = 0; trial < 40; ++trial) {
    TailScalerConfig c;
    c.park_after = absl::Seconds(trial % 2 == 0 ? 10 : 25);
    auto s = Make(c);
    int n = 0;
    double rate = 0;
    auto draw = [&] { return rate == 0 ? 0.0 : std::poisson_distribution<int>(rate)(rng) * 1.0; };
    int sec = 0;
    while (sec < 2000) {
      if (rng() % 40 == 0)
        rate = rates[rng() % 5];
      absl::Time t = kT0 + absl::Seconds(++sec);
      s->Observe(LoadSample{t, draw(), n, 10, 0});
      n = s->Desired(t);
      const HorizontalScaler::SamplePromise p = s->PromiseSamples(t, absl::Seconds(1), n);
      if (p.samples <= 0)
        continue;
      const int active_wanted = s->ActiveWanted(t);
      const absl::Time due = s->NextWakeup();
      HorizontalScaler::SamplePromise::Cursor batch(p);
      bool due_checked = false;
      while (batch.NextAllowed() && batch.taken() < 60 && sec < 2000) {
        const double rps = draw();
        batch.Take(rps);
        extended += batch.taken() > p.quiet_first ? 1 : 0;
        t = kT0 + absl::Seconds(++sec);
        if (!due_checked && due <= t) {  // samples before the wake-up are in
          due_checked = true;
          ASSERT_EQ(s->Desired(due), n) << "trial " << trial << " due at t=" << sec;
          ASSERT_EQ(s->ActiveWanted(due), active_wanted) << "trial " << trial << " t=" << sec;
        }
        s->Observe(LoadSample{t, rps, n, 10, 0});
        ASSERT_EQ(s->Desired(t), n) << "trial " << trial << " t=" << sec;
        ASSERT_EQ(s->ActiveWanted(t), active_wanted) << "trial " << trial << " t=" << sec;
      }
    }
  }
  EXPECT_GT(extended, 1000);  // samples beyond the unrefined promise were exercised
}

// Property: whenever QuietSamplesWithoutDecision(t, 1 s, n) returns k, k quiet samples leave
// Desired, ActiveWanted and NextWakeup as they were. Between promises the load is random (idle
// stretches, light and heavy phases), with a fixed or a histogram keep-alive.
TEST(TailScalerTest, QuietSamplesWithoutDecisionAreKept) {
  std::mt19937 rng(11);
  const double rates[] = {0, 0, 0.05, 3, 30};
  int promises = 0;
  for (int trial = 0; trial < 40; ++trial) {
    TailScalerConfig c;
    c.prewarm = trial % 2 == 0;
    c.keep_alive = absl::Seconds(60 + 20 * (trial % 3));
    auto s = Make(c);
    int n = 0;
    double rate = 0;
    for (int sec = 1; sec <= 3000; ++sec) {
      if (rng() % 90 == 0)
        rate = rates[rng() % 5];
      const double rps = rate == 0 ? 0.0 : std::poisson_distribution<int>(rate)(rng);
      absl::Time t = kT0 + absl::Seconds(sec);
      s->Observe(LoadSample{t, rps, n, 10, 0});
      n = s->Desired(t);
      const int k = s->QuietSamplesWithoutDecision(t, absl::Seconds(1), n);
      if (k <= 0)
        continue;
      ++promises;
      const int active = s->ActiveWanted(t);
      const absl::Time wake = s->NextWakeup();
      for (int j = 0; j < k && sec < 3000; ++j) {
        t = kT0 + absl::Seconds(++sec);
        s->Observe(LoadSample{t, 0, n, 10, 0});
        ASSERT_EQ(s->Desired(t), n) << "trial " << trial << " t=" << sec;
        ASSERT_EQ(s->ActiveWanted(t), active) << "trial " << trial << " t=" << sec;
        ASSERT_EQ(s->NextWakeup(), wake) << "trial " << trial << " t=" << sec;
      }
    }
  }
  EXPECT_GT(promises, 300);
}

TEST(TailScalerTest, QuietPromiseStopsBeforeTheLazyScaleIn) {
  TailScalerConfig c;
  c.prewarm = false;
  c.keep_alive = absl::Minutes(5);
  auto s = Make(c);
  for (int t = 1; t <= 40; ++t)  // two instances at 15 rps: neither high (> 20) nor low (< 10)
    s->Observe(At(absl::Seconds(t), 15, 2));
  ASSERT_EQ(s->Desired(kT0 + absl::Seconds(40)), 2);
  for (int t = 41; t <= 51; ++t)
    s->Observe(At(absl::Seconds(t), 0, 2));
  // Parked since 50 s; the 31st low sample (at 71 s) makes the lazy scaler (and, above the
  // resident floor of one, Desired) go to 1: quiet samples at 52..70 s are safe, no more.
  const absl::Time now = kT0 + absl::Seconds(51);
  EXPECT_EQ(s->ActiveWanted(now), 0);
  EXPECT_EQ(s->QuietSamplesWithoutDecision(now, absl::Seconds(1), 2), 19);
  for (int t = 52; t <= 71; ++t)
    s->Observe(At(absl::Seconds(t), 0, 2));
  EXPECT_EQ(s->Desired(kT0 + absl::Seconds(71)), 1);
}

TEST(TailScalerTest, NoPromiseWithoutAnActiveSampleOrOnceParked) {
  TailScalerConfig c;
  c.park_after = absl::Seconds(10);
  auto s = Make(c);
  EXPECT_EQ(s->SamplesWithoutDecision(kT0, absl::Seconds(1), 1), 0);  // nothing seen yet
  s->Observe(At(absl::Seconds(1), 5, 1));
  // Active at 1 s: samples at 2..10 s stay before the park time (11 s).
  EXPECT_EQ(s->SamplesWithoutDecision(kT0 + absl::Seconds(1), absl::Seconds(1), 1), 9);
  EXPECT_EQ(s->SamplesWithoutDecision(kT0 + absl::Seconds(1), absl::Seconds(1), 2), 0);
  for (int t = 2; t <= 11; ++t)
    s->Observe(At(absl::Seconds(t), 0, 1));
  EXPECT_EQ(s->SamplesWithoutDecision(kT0 + absl::Seconds(11), absl::Seconds(1), 1), 0);
}

}  // namespace
}  // namespace sluice::core
