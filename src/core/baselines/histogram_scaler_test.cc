// IdleTimeHistogram (hand-worked bins, CV, percentiles, windows) and HistogramScaler (pre-warm
// before a periodic arrival, keep-alive covering the 99th percentile, fallback when not
// representative, immediate scale-out, and a seeded property: Desired changes only at samples
// and at NextWakeup()).
#include "core/baselines/histogram_scaler.h"

#include <random>

#include "gtest/gtest.h"

#include "core/baselines/idle_time_histogram.h"

namespace sluice::core {
namespace {

const absl::Time kT0 = absl::UnixEpoch() + absl::Hours(1);

absl::Time At(double s) {
  return kT0 + absl::Seconds(s);
}

LoadSample Sample(double s, double rps, double cap = 100) {
  return LoadSample{At(s), rps, 0, cap, 0};
}

std::unique_ptr<HistogramScaler> Make(HistogramScalerConfig cfg = {}) {
  auto s = HistogramScaler::Create(cfg);
  EXPECT_TRUE(s.ok()) << s.status();
  return std::move(*s);
}

// One request every `gap` seconds (a sample with load), idle samples every second in between.
// Returns the time of the last use.
double Periodic(HistogramScaler& s, double start, double gap, int uses) {
  double t = start;
  for (int i = 0; i < uses; ++i) {
    if (i > 0) {
      for (double idle = t + 1; idle < t + gap; idle += 1)
        s.Observe(Sample(idle, 0));
      t += gap;
    }
    s.Observe(Sample(t, 10));
    s.Desired(At(t));
  }
  return t;
}

TEST(IdleTimeHistogramTest, BinsPercentilesAndCv) {
  IdleHistogramConfig cfg;
  cfg.bins = 4;
  IdleTimeHistogram h(cfg);
  EXPECT_EQ(h.BinCountCv(), 0);
  for (int i = 0; i < 4; ++i)
    h.Record(absl::Milliseconds(500));  // bin 0
  h.Record(absl::Seconds(-1));          // clamps to bin 0
  h.Record(absl::Seconds(4));           // out of bounds
  EXPECT_EQ(h.observations(), 6);
  EXPECT_EQ(h.out_of_bounds(), 1);
  EXPECT_EQ(h.count(0), 5);
  // counts {5, 0, 0, 0}: mean 1.25, variance 25 / 4 - 1.5625 = 4.6875, CV = sqrt(3).
  EXPECT_NEAR(h.BinCountCv(), std::sqrt(3.0), 1e-12);
  EXPECT_EQ(h.PercentileBin(5), 0);
  EXPECT_EQ(h.PercentileBin(80), 0);  // rank ceil(4.8) = 5: still bin 0
  EXPECT_EQ(h.PercentileBin(99), 4);  // rank 6: the out-of-bounds one
}

TEST(IdleTimeHistogramTest, WindowsFromHeadAndTail) {
  IdleTimeHistogram h(IdleHistogramConfig{});  // 240 x 1 s, 5th / 99th, margin 10 %
  for (int i = 0; i < 5; ++i)
    h.Record(absl::Seconds(20.5));  // bin 20
  for (int i = 0; i < 94; ++i)
    h.Record(absl::Seconds(30.2));  // bin 30
  h.Record(absl::Seconds(45));      // bin 45
  EXPECT_EQ(h.PercentileBin(5), 20);
  EXPECT_EQ(h.PercentileBin(99), 30);
  EXPECT_EQ(h.PercentileBin(100), 45);
  const IdleWindows w = h.Windows();
  ASSERT_TRUE(w.representative);
  EXPECT_EQ(w.prewarm, absl::Seconds(18));             // 20 x 0.9
  EXPECT_EQ(w.keep_alive_until, absl::Seconds(34.1));  // 31 x 1.1
}

TEST(IdleTimeHistogramTest, NotRepresentativeWhenFlatSparseOrOutOfBounds) {
  IdleHistogramConfig cfg;
  IdleTimeHistogram flat(cfg);
  for (int b = 0; b < cfg.bins; ++b)
    flat.Record(absl::Seconds(b));
  EXPECT_EQ(flat.BinCountCv(), 0);
  EXPECT_FALSE(flat.Windows().representative);

  IdleTimeHistogram sparse(cfg);
  for (int i = 0; i < cfg.min_observations - 1; ++i)
    sparse.Record(absl::Seconds(7));
  EXPECT_GT(sparse.BinCountCv(), cfg.cv_threshold);
  EXPECT_FALSE(sparse.Windows().representative);
  sparse.Record(absl::Seconds(7));
  EXPECT_TRUE(sparse.Windows().representative);

  IdleTimeHistogram far(cfg);
  for (int i = 0; i < 20; ++i)
    far.Record(absl::Seconds(i % 2 == 0 ? 5 : 1000));
  EXPECT_FALSE(far.Windows().representative);  // the 99th percentile is out of bounds
}

TEST(IdleTimeHistogramTest, RejectsBadConfig) {
  IdleHistogramConfig c;
  c.keep_alive_percentile = 101;
  EXPECT_FALSE(ValidateIdleHistogramConfig(c).ok());
  c = {};
  c.prewarm_percentile = 50;
  c.keep_alive_percentile = 40;
  EXPECT_FALSE(ValidateIdleHistogramConfig(c).ok());
  c = {};
  c.bin_width = absl::ZeroDuration();
  EXPECT_FALSE(ValidateIdleHistogramConfig(c).ok());
  c = {};
  c.margin = 1;
  EXPECT_FALSE(ValidateIdleHistogramConfig(c).ok());
  EXPECT_TRUE(ValidateIdleHistogramConfig({}).ok());
}

TEST(HistogramScalerTest, ScalesOutOnTheFirstOverloadedSample) {
  auto s = Make();
  EXPECT_EQ(s->Desired(At(0)), 0);
  s->Observe(Sample(0, 250));  // ceil(2.5) = 3
  EXPECT_EQ(s->Desired(At(0)), 3);
  EXPECT_EQ(s->levels(), 3);
}

TEST(HistogramScalerTest, PrewarmsBeforeAPeriodicArrival) {
  auto s = Make();  // lead 3 s, fallback 240 s
  // 11 uses 30 s apart: 10 idle times of 30 s (bin 30): representative from the 10th on.
  const double last = Periodic(*s, 0, 30, 11);
  const IdleWindows w = s->windows(1);
  ASSERT_TRUE(w.representative);
  EXPECT_EQ(w.prewarm, absl::Seconds(27));             // 30 x 0.9
  EXPECT_EQ(w.keep_alive_until, absl::Seconds(34.1));  // 31 x 1.1
  // Unloaded right after the use, reloaded at 27 - 3 = 24 s, ready before the use at 30 s.
  EXPECT_EQ(s->Desired(At(last)), 1);
  EXPECT_EQ(s->NextWakeup(), At(last) + absl::Nanoseconds(1));
  EXPECT_EQ(s->Desired(At(last) + absl::Nanoseconds(1)), 0);
  EXPECT_EQ(s->NextWakeup(), At(last + 24));
  EXPECT_EQ(s->Desired(At(last + 23.9)), 0);
  EXPECT_EQ(s->Desired(At(last + 24)), 1);
  EXPECT_EQ(s->Desired(At(last + 30)), 1);
  EXPECT_EQ(s->NextWakeup(), At(last + 34.1));
  EXPECT_EQ(s->Desired(At(last + 34.1)), 0);  // the use did not come: gone at the tail
  EXPECT_EQ(s->NextWakeup(), absl::InfiniteFuture());
}

TEST(HistogramScalerTest, KeepAliveCoversThe99thPercentile) {
  auto s = Make();
  // Idle times 2, 4, ..., 12 s, five times each (30): head bin 2 -> 1.8 s, below the 3 s lead,
  // so nothing is unloaded; tail rank 30 -> bin 12 -> alive until 13 x 1.1 = 14.3 s.
  double t = 0;
  s->Observe(Sample(t, 10));
  for (int rep = 0; rep < 5; ++rep) {
    for (int gap = 2; gap <= 12; gap += 2) {
      // The level is still warm when the next use arrives.
      EXPECT_EQ(s->Desired(At(t + gap) - absl::Nanoseconds(1)), 1) << "gap " << gap;
      t += gap;
      s->Observe(Sample(t, 10));
    }
  }
  const IdleWindows w = s->windows(1);
  ASSERT_TRUE(w.representative);
  EXPECT_EQ(w.prewarm, absl::Seconds(1.8));
  EXPECT_EQ(w.keep_alive_until, absl::Seconds(14.3));
  EXPECT_EQ(s->Desired(At(t + 1)), 1);  // no unload: the pre-warm window is below the lead
  EXPECT_EQ(s->Desired(At(t + 14.2)), 1);
  EXPECT_EQ(s->Desired(At(t + 14.3)), 0);
}

TEST(HistogramScalerTest, FallsBackToFixedKeepAliveWhenNotRepresentative) {
  HistogramScalerConfig cfg;
  cfg.fallback_keep_alive = absl::Seconds(100);
  auto s = Make(cfg);
  // Idle times spread evenly over many bins: CV of the bin counts < 2.
  double t = 0;
  s->Observe(Sample(t, 10));
  for (int gap = 1; gap <= 200; gap += 1) {
    t += gap;
    s->Observe(Sample(t, 10));
  }
  EXPECT_LT(s->histogram(1).BinCountCv(), 2);
  EXPECT_FALSE(s->windows(1).representative);
  EXPECT_EQ(s->Desired(At(t + 99.9)), 1);
  EXPECT_EQ(s->NextWakeup(), At(t + 100));
  EXPECT_EQ(s->Desired(At(t + 100)), 0);
}

TEST(HistogramScalerTest, LevelsKeepTheirOwnHistograms) {
  auto s = Make();
  // Level 1 is used every 30 s; level 2 only once (a burst): it keeps the fallback keep-alive.
  double t = Periodic(*s, 0, 30, 11);
  s->Observe(Sample(t + 30, 150));  // burst: 2 instances needed
  t += 30;
  EXPECT_EQ(s->Desired(At(t)), 2);
  EXPECT_TRUE(s->windows(1).representative);
  EXPECT_FALSE(s->windows(2).representative);
  EXPECT_EQ(s->Desired(At(t + 10)), 1);   // level 1 unloaded, level 2 kept alive (fallback)
  EXPECT_EQ(s->Desired(At(t + 25)), 2);   // level 1 pre-warmed again
  EXPECT_EQ(s->Desired(At(t + 239)), 1);  // level 1 gone at 34.1 s; level 2 still alive
  EXPECT_EQ(s->Desired(At(t + 240)), 0);
}

TEST(HistogramScalerTest, ClampsAndRejectsBadConfig) {
  HistogramScalerConfig cfg;
  cfg.min_instances = 2;
  cfg.max_instances = 4;
  auto s = Make(cfg);
  EXPECT_EQ(s->Desired(At(0)), 2);
  s->Observe(Sample(0, 1e6));
  EXPECT_EQ(s->Desired(At(0)), 4);
  cfg.min_instances = 5;
  EXPECT_FALSE(HistogramScaler::Create(cfg).ok());
  cfg = {};
  cfg.prewarm_lead = absl::Seconds(-1);
  EXPECT_FALSE(HistogramScaler::Create(cfg).ok());
  cfg = {};
  cfg.histogram.bins = 0;
  EXPECT_FALSE(HistogramScaler::Create(cfg).ok());
}

// Random loads with random idle stretches: right after a sample Desired covers what the sample
// needs; between samples Desired changes only at the times NextWakeup() announces.
TEST(HistogramScalerPropertyTest, ScalesOutAtOnceAndChangesOnlyAtWakeups) {
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    HistogramScalerConfig cfg;
    cfg.min_instances = static_cast<int>(rng() % 2);
    cfg.max_instances = 6;
    cfg.histogram.min_observations = 3;
    cfg.fallback_keep_alive = absl::Seconds(rng() % 60);
    auto s = Make(cfg);
    double t = 0;
    for (int step = 0; step < 300; ++step) {
      const bool busy = rng() % 3 == 0;
      const double rps = busy ? static_cast<double>(rng() % 800) : 0;
      s->Observe(Sample(t, rps));
      const int needed = s->last_needed();
      int d = s->Desired(At(t));
      ASSERT_GE(d, std::min(needed, cfg.max_instances)) << "seed " << seed << " t " << t;
      ASSERT_LE(d, cfg.max_instances);
      ASSERT_GE(d, cfg.min_instances);
      const double next_sample = t + 1 + static_cast<double>(rng() % 40);
      absl::Time now = At(t);
      for (absl::Time w = s->NextWakeup(); w < At(next_sample); w = s->NextWakeup()) {
        ASSERT_GT(w, now) << "seed " << seed;
        // Just before the wakeup nothing has changed yet.
        ASSERT_EQ(s->Desired(w - absl::Nanoseconds(1)), d) << "seed " << seed << " t " << t;
        now = w;
        d = s->Desired(w);
      }
      ASSERT_EQ(s->Desired(At(next_sample) - absl::Nanoseconds(1)), d) << "seed " << seed;
      t = next_sample;
    }
  }
}

}  // namespace
}  // namespace sluice::core
