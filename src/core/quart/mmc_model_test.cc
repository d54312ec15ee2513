// Unit tests for the M/M/c model against hand-computed values.
#include "core/quart/mmc_model.h"

#include "gtest/gtest.h"

namespace sluice::core {
namespace {

TEST(ErlangC, SingleServerEqualsUtilisation) {
  EXPECT_NEAR(ErlangC(1, 0.5), 0.5, 1e-12);
  EXPECT_NEAR(ErlangC(1, 0.9), 0.9, 1e-12);
}

TEST(ErlangC, TwoServersUnitLoadIsOneThird) {
  // B(2, 1) = 0.5 / 2.5 = 0.2; C = 2 x 0.2 / (2 - 1 x 0.8) = 1/3.
  EXPECT_NEAR(ErlangC(2, 1.0), 1.0 / 3.0, 1e-12);
}

TEST(ErlangC, EdgeCases) {
  EXPECT_EQ(ErlangC(4, 0.0), 0.0);
  EXPECT_EQ(ErlangC(4, 4.0), 1.0);
  EXPECT_EQ(ErlangC(4, 9.0), 1.0);
  EXPECT_EQ(ErlangC(0, 1.0), 1.0);
  EXPECT_EQ(ErlangC(3, -1.0), 0.0);
  EXPECT_EQ(ErlangC(3, NAN), 0.0);
}

TEST(ErlangC, LargeServerCountsStayFinite) {
  const double c = ErlangC(5000, 4900.0);
  EXPECT_GT(c, 0.0);
  EXPECT_LT(c, 1.0);
}

TEST(MmcQueue, MM1MatchesClosedForm) {
  const MmcResult r = MmcQueue(0.5, 1.0, 1);
  EXPECT_TRUE(r.stable);
  EXPECT_NEAR(r.utilisation, 0.5, 1e-12);
  EXPECT_NEAR(absl::ToDoubleSeconds(r.mean_wait), 1.0, 1e-9);
  EXPECT_NEAR(absl::ToDoubleSeconds(r.mean_sojourn), 2.0, 1e-9);  // 1 / (mu - lambda)
}

TEST(MmcQueue, MM2) {
  const MmcResult r = MmcQueue(1.0, 1.0, 2);
  EXPECT_NEAR(absl::ToDoubleSeconds(r.mean_wait), 1.0 / 3.0, 1e-9);
}

TEST(MmcQueue, UnstableIsInfinite) {
  const MmcResult r = MmcQueue(10.0, 2.0, 4);
  EXPECT_FALSE(r.stable);
  EXPECT_EQ(r.wait_probability, 1.0);
  EXPECT_EQ(r.mean_sojourn, absl::InfiniteDuration());
  EXPECT_FALSE(MmcQueue(1.0, 0.0, 4).stable);
  EXPECT_FALSE(MmcQueue(1.0, 2.0, 0).stable);
}

TEST(MmcQueue, IdleStageHasServiceTimeOnly) {
  const MmcResult r = MmcQueue(0.0, 4.0, 1);
  EXPECT_TRUE(r.stable);
  EXPECT_EQ(r.mean_wait, absl::ZeroDuration());
  EXPECT_EQ(r.mean_sojourn, absl::Milliseconds(250));
}

TEST(GgcSojourn, PoissonEqualsMmcAndBurstierWaitsLonger) {
  const MmcResult m = MmcQueue(3.0, 1.0, 4);
  EXPECT_EQ(GgcSojourn(3.0, 1.0, 4, 1.0, 1.0), m.mean_sojourn);
  EXPECT_GT(GgcSojourn(3.0, 1.0, 4, 4.0, 1.0), m.mean_sojourn);
  EXPECT_LT(GgcSojourn(3.0, 1.0, 4, 0.1, 0.1), m.mean_sojourn);
}

TEST(ReplicasForTarget, FindsFewestMeetingTarget) {
  // lambda 9, mu 1: 10 replicas are the fewest stable ones; the target 1.2 s needs more.
  const int c = ReplicasForTarget(9.0, 1.0, absl::Milliseconds(1200), 100);
  EXPECT_LE(absl::ToDoubleSeconds(MmcQueue(9.0, 1.0, c).mean_sojourn), 1.2);
  EXPECT_GT(absl::ToDoubleSeconds(MmcQueue(9.0, 1.0, c - 1).mean_sojourn), 1.2);
}

TEST(ReplicasForTarget, BoundsAndIdle) {
  EXPECT_EQ(ReplicasForTarget(0.0, 1.0, absl::Seconds(2), 8), 1);
  EXPECT_EQ(ReplicasForTarget(5.0, 1.0, absl::Milliseconds(900), 8), 8);  // below 1 / mu
  EXPECT_EQ(ReplicasForTarget(50.0, 1.0, absl::Seconds(2), 8), 8);        // cap wins
  EXPECT_EQ(ReplicasForTarget(5.0, 0.0, absl::Seconds(2), 8), 8);
}

TEST(ReplicasForTarget, BurstierArrivalsNeedAtLeastAsMany) {
  const int poisson = ReplicasForTarget(20.0, 1.0, absl::Milliseconds(1100), 200);
  const int bursty = ReplicasForTarget(20.0, 1.0, absl::Milliseconds(1100), 200, 4.0);
  EXPECT_GT(bursty, poisson);
}

}  // namespace
}  // namespace sluice::core
