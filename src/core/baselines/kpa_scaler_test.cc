// KpaScaler: stable-window scaling, panic mode (enter, never down while panicking, exit after a
// stable window), rate limits, scale to zero after the grace, and config validation.
#include "core/baselines/kpa_scaler.h"

#include "gtest/gtest.h"

namespace sluice::core {
namespace {

const absl::Time kT0 = absl::UnixEpoch() + absl::Hours(1);

// request_latency 1 s, target 10 x 0.5: each 5 rps is one instance.
KpaConfig Config() {
  KpaConfig c;
  c.target_concurrency = 10;
  c.target_utilization = 0.5;
  c.request_latency = absl::Seconds(1);
  return c;
}

std::unique_ptr<KpaScaler> Make(KpaConfig c = Config()) {
  auto s = KpaScaler::Create(c);
  EXPECT_TRUE(s.ok()) << s.status();
  return std::move(*s);
}

void Feed(KpaScaler& s, int from, int to, double rps, int instances) {
  for (int t = from; t < to; ++t)
    s.Observe({kT0 + absl::Seconds(t), rps, instances, 0, 0});
}

TEST(KpaScalerTest, StableWindowAveragesLoad) {
  auto s = Make();
  EXPECT_EQ(s->Desired(kT0), 1);  // min_instances before any sample
  Feed(*s, 0, 60, 12, 3);         // 12 rps -> 2.4 -> 3
  EXPECT_EQ(s->Desired(kT0 + absl::Seconds(60)), 3);
  EXPECT_FALSE(s->in_panic());
  Feed(*s, 60, 90, 2, 3);  // window mean (30 x 12 + 30 x 2) / 60 = 7 -> 2
  EXPECT_EQ(s->Desired(kT0 + absl::Seconds(90)), 2);
  Feed(*s, 90, 200, 2, 2);  // 2 rps -> 1
  EXPECT_EQ(s->Desired(kT0 + absl::Seconds(200)), 1);
}

TEST(KpaScalerTest, PanicScalesFastAndNeverDownUntilAStableWindowPasses) {
  auto s = Make();
  Feed(*s, 0, 60, 5, 1);     // 1 instance
  Feed(*s, 60, 66, 50, 1);   // panic window mean 50 -> 10 >= 2 x 1 ready
  EXPECT_TRUE(s->in_panic());
  EXPECT_EQ(s->Desired(kT0 + absl::Seconds(66)), 10);
  Feed(*s, 66, 80, 5, 10);   // load gone, but panicking: stays 10
  EXPECT_EQ(s->Desired(kT0 + absl::Seconds(80)), 10);
  Feed(*s, 80, 200, 5, 10);  // a stable window after the last over-threshold sample
  EXPECT_FALSE(s->in_panic());
  EXPECT_LE(s->Desired(kT0 + absl::Seconds(200)), 5);
}

TEST(KpaScalerTest, ScaleDownRateHalvesPerEvaluation) {
  auto s = Make();
  Feed(*s, 0, 60, 50, 10);  // 10
  Feed(*s, 60, 61, 0, 10);  // stable mean still high: 10 (59 x 50 + 0) / 60 -> 10
  EXPECT_EQ(s->Desired(kT0 + absl::Seconds(61)), 10);
  Feed(*s, 61, 200, 0, 10);  // stable 0, but at most 10 -> 5 per evaluation
  EXPECT_EQ(s->Desired(kT0 + absl::Seconds(200)), 5);
}

TEST(KpaScalerTest, ScaleToZeroAfterGraceWhenAllowed) {
  KpaConfig c = Config();
  c.min_instances = 0;
  auto s = Make(c);
  Feed(*s, 0, 10, 5, 1);
  Feed(*s, 10, 70, 0, 1);  // the window (t - 60, t] holds no load from t = 69
  const absl::Time zero = kT0 + absl::Seconds(69);
  EXPECT_EQ(s->Desired(zero), 1);
  EXPECT_EQ(s->NextWakeup(), zero + absl::Seconds(30));
  EXPECT_EQ(s->Desired(zero + absl::Seconds(29)), 1);
  EXPECT_EQ(s->Desired(zero + absl::Seconds(30)), 0);
  // Default min 1: never 0.
  auto keep = Make();
  Feed(*keep, 0, 200, 0, 1);
  EXPECT_EQ(keep->Desired(kT0 + absl::Seconds(500)), 1);
}

TEST(KpaScalerTest, QueueCountsAsConcurrency) {
  auto s = Make();
  s->Observe({kT0, 0, 1, 0, 25});  // 25 queued -> 5 instances (panic: 5 >= 2 x 1)
  EXPECT_EQ(s->Desired(kT0), 5);
}

TEST(KpaScalerTest, RejectsBadConfigNamingTheField) {
  KpaConfig c = Config();
  c.panic_window = absl::Seconds(120);
  auto s = KpaScaler::Create(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("panic_window"), std::string::npos);
  c = Config();
  c.target_concurrency = 0;
  EXPECT_NE(KpaScaler::Create(c).status().message().find("target_concurrency"),
            std::string::npos);
  c = Config();
  c.max_scale_down_rate = 0.5;
  EXPECT_FALSE(KpaScaler::Create(c).ok());
}

}  // namespace
}  // namespace sluice::core
