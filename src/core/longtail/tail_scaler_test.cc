// TailScaler: busy functions follow the lazy scaler; idle ones park after park_after, stay
// resident until the keep-alive (fixed, or the idle-time histogram's tail), pre-warm at the
// histogram's head, and are never demoted early when a cached cold start would miss the SLO.
#include "core/longtail/tail_scaler.h"

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

}  // namespace
}  // namespace sluice::core
