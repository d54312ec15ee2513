// Unit tests for CV propagation.
#include "core/quart/cv_propagation.h"

#include <cmath>

#include "gtest/gtest.h"

namespace sluice::core {
namespace {

TEST(DepartureCv, SingleServerIsTheBriefsFormula) {
  const double ca = 2.0, cs = 0.3, rho = 0.7;
  const double expected = std::sqrt(rho * rho * cs * cs + (1 - rho * rho) * ca * ca);
  EXPECT_NEAR(DepartureCv(ca, cs, rho, 1), expected, 1e-12);
}

TEST(DepartureCv, LimitsOfUtilisation) {
  EXPECT_NEAR(DepartureCv(3.0, 0.2, 0.0, 1), 3.0, 1e-12);  // idle: arrivals pass through
  EXPECT_NEAR(DepartureCv(3.0, 0.2, 1.0, 1), 0.2, 1e-12);  // saturated: the service paces
  EXPECT_NEAR(DepartureCv(3.0, 0.2, 5.0, 1), 0.2, 1e-12);  // overload clamps to rho 1
  EXPECT_NEAR(DepartureCv(1.0, 1.0, 0.6, 4), 1.0, 1e-12);  // M/M/c departures are Poisson
}

TEST(PredictStageCvs, SmoothEntryGrowsBurstyEntryShrinks) {
  // The paper's Fig. 2a case: entry CV 0.1 grows along the pipeline (0.03 -> 0.25 there) when
  // stages are busy and their service times vary more than the arrivals.
  std::vector<StageCvInput> stages(5, StageCvInput{0.8, 0.4, 1});
  const std::vector<double> low = PredictStageCvs(0.1, stages);
  ASSERT_EQ(low.size(), 5u);
  EXPECT_EQ(low[0], 0.1);
  for (size_t i = 1; i < low.size(); ++i)
    EXPECT_GT(low[i], low[i - 1]);
  const std::vector<double> high = PredictStageCvs(4.0, stages);
  for (size_t i = 1; i < high.size(); ++i)
    EXPECT_LT(high[i], high[i - 1]);
}

TEST(PredictStageCvs, BadInputCountsAsZero) {
  const std::vector<double> cvs = PredictStageCvs(NAN, {StageCvInput{-1.0, NAN, 0}});
  EXPECT_EQ(cvs, std::vector<double>{0.0});
}

}  // namespace
}  // namespace sluice::core
