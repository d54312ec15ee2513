// `sim predict` / `sim predictor-eval` through their Run functions: input errors (no data needed)
// and, when the RaPP table exists, the JSON output.
#include "sim/cli/predict_command.h"

#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

#include "sim/predictor/rapp_data.h"

namespace sluice::sim {
namespace {

using ::testing::HasSubstr;

int Predict(const SimPredictOptions& o, std::string* out, std::string* err) {
  std::ostringstream o_out, o_err;
  int rc = RunPredictCommand(o, o_out, o_err);
  *out = o_out.str(), *err = o_err.str();
  return rc;
}

TEST(PredictCommandTest, BadFractionsNameTheField) {
  std::string out, err;
  EXPECT_EQ(Predict({.model = "resnet50", .quota = 0}, &out, &err), 2);
  EXPECT_THAT(err, HasSubstr("quota: 0 is outside (0, 1]"));
  EXPECT_EQ(Predict({.model = "resnet50", .sm = 1.2}, &out, &err), 2);
  EXPECT_THAT(err, HasSubstr("sm: 1.2 is outside"));
  EXPECT_EQ(Predict({.model = "resnet50", .batch = 0}, &out, &err), 2);
  EXPECT_THAT(err, HasSubstr("batch: 0 is below 1"));
  EXPECT_TRUE(out.empty());
}

TEST(PredictCommandTest, JsonWhenTheDataExists) {
  if (!LoadRappProfiles().ok())
    GTEST_SKIP() << "RaPP table absent";
  std::string out, err;
  ASSERT_EQ(Predict({.model = "resnet50", .batch = 1, .sm = 0.5, .quota = 0.1, .json = true},
                    &out, &err),
            0)
      << err;
  nlohmann::json j = nlohmann::json::parse(out);
  EXPECT_NEAR(j["latency_ms"].get<double>(), 246.3, 40);  // measured 246.3 ms
  EXPECT_NEAR(j["measured_ms"].get<double>(), 246.3, 0.1);
  EXPECT_EQ(j["profiled"].size(), 6u);
  EXPECT_EQ(Predict({.model = "resnet50", .batch = 9}, &out, &err), 2);
  EXPECT_THAT(err, HasSubstr("allowed 1..8"));
}

}  // namespace
}  // namespace sluice::sim
