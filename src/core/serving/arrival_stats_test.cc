// ArrivalStats: exact CVs of known gap sequences, the unknown value, and a window Reset that keeps
// the last arrival.
#include "core/serving/arrival_stats.h"

#include "gtest/gtest.h"

namespace sluice::core {
namespace {

const absl::Time kT0 = absl::UnixEpoch();

TEST(ArrivalStatsTest, PeriodicArrivalsHaveCvZero) {
  ArrivalStats s;
  for (int i = 0; i < 10; ++i) s.OnArrival(kT0 + absl::Milliseconds(100 * i));
  EXPECT_EQ(s.gaps(), 9);
  EXPECT_NEAR(s.Cv(-1), 0.0, 1e-12);
}

TEST(ArrivalStatsTest, AlternatingGapsHaveTheirPopulationCv) {
  ArrivalStats s;
  absl::Time t = kT0;
  s.OnArrival(t);
  for (int i = 0; i < 10; ++i) {
    t += absl::Milliseconds(i % 2 == 0 ? 100 : 300);  // mean 0.2 s, deviation 0.1 s
    s.OnArrival(t);
  }
  EXPECT_NEAR(s.Cv(-1), 0.5, 1e-9);
}

TEST(ArrivalStatsTest, FewerThanTwoGapsIsUnknown) {
  ArrivalStats s;
  EXPECT_EQ(s.Cv(1.0), 1.0);
  s.OnArrival(kT0);
  s.OnArrival(kT0 + absl::Seconds(1));
  EXPECT_EQ(s.Cv(7.0), 7.0);
  s.OnArrival(kT0 + absl::Seconds(1));  // a zero gap: mean 0.5 s, CV 1
  EXPECT_NEAR(s.Cv(7.0), 1.0, 1e-12);
}

TEST(ArrivalStatsTest, ResetKeepsTheLastArrivalSoTheFirstGapSpansTheBoundary) {
  ArrivalStats s;
  s.OnArrival(kT0);
  s.OnArrival(kT0 + absl::Seconds(1));
  s.Reset();
  EXPECT_EQ(s.gaps(), 0);
  s.OnArrival(kT0 + absl::Seconds(3));  // gap 2 s from the arrival before the Reset
  s.OnArrival(kT0 + absl::Seconds(5));
  EXPECT_EQ(s.gaps(), 2);
  EXPECT_NEAR(s.Cv(-1), 0.0, 1e-12);
}

}  // namespace
}  // namespace sluice::core
