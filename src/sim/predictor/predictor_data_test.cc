// The predictor on the real RaPP table: held-out MAPE bound and the rapp/<model> perf models.
// Skipped when ../shared/data (or $SLUICE_DATA_DIR) lacks the table.
#include <cmath>
#include <iostream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

#include "core/perf/perf_model.h"
#include "sim/predictor/predictor_eval.h"
#include "sim/predictor/rapp_data.h"

namespace sluice::sim {
namespace {

class PredictorDataTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto pts = LoadRappProfiles();
    if (pts.ok())
      points_ = new std::vector<core::ProfilePoint>(*std::move(pts));
  }
  static void TearDownTestSuite() { delete points_; }
  void SetUp() override {
    if (points_ == nullptr)
      GTEST_SKIP() << "RaPP table absent: " << RappDataPath();
  }
  static std::vector<core::ProfilePoint>* points_;
};
std::vector<core::ProfilePoint>* PredictorDataTest::points_ = nullptr;

TEST_F(PredictorDataTest, HeldOutModelsWithinEightPercent) {
  auto e = EvaluatePredictor(*points_);
  ASSERT_TRUE(e.ok()) << e.status();
  std::cout << PredictorEvalText(*e);
  // Measured (docs/perf-model.md): 7.3 % leave-one-model-out; the bound is 8 %.
  EXPECT_LE(e->mape_unseen_models, 8.0);
  EXPECT_GE(e->models, 68);
  EXPECT_EQ(e->points_per_model, 6);
  EXPECT_GT(e->rows, 50000);
  // The predictor beats the analytic global quota term on time-sliced rows by a wide margin.
  EXPECT_LT(e->mape_sliced_unseen, e->mape_analytic_quota / 2);
  nlohmann::json j = nlohmann::json::parse(PredictorEvalJson(*e));
  for (const char* key : {"mape", "mape_unseen_models", "points_per_model", "rows", "per_model",
                          "mape_low_quota", "mape_low_sm"})
    EXPECT_TRUE(j.contains(key)) << key;
}

TEST_F(PredictorDataTest, SeededKFoldIsRepeatable) {
  PredictorEvalOptions o;
  o.folds = 5;
  o.seed = 3;
  auto a = EvaluatePredictor(*points_, o);
  auto b = EvaluatePredictor(*points_, o);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->mape_unseen_models, b->mape_unseen_models);
  EXPECT_EQ(a->folds, 5);
  EXPECT_LE(a->mape_unseen_models, 9.0);
}

TEST_F(PredictorDataTest, RappModelsJoinThePerfModel) {
  core::PerfModel perf;
  ASSERT_TRUE(AddRappModelsNamedIn("functions:\n  - model: rapp/resnet50\n"
                                   "  - model: rapp/mobilenet-v3-large\n",
                                   perf)
                  .ok());
  auto e = perf.Find("rapp/resnet50");
  ASSERT_TRUE(e.ok()) << e.status();
  ASSERT_TRUE(perf.Find("rapp/mobilenet_v3_large").ok());
  // resnet50 at quota 10 % waits for its slices: about 250 ms measured at every share.
  double t = absl::ToDoubleSeconds((*e)->latency->BatchLatency(1, 0.5, 0.1));
  EXPECT_NEAR(t, 0.250, 0.05);
  EXPECT_THAT(AddRappModelsNamedIn("model: rapp/nosuchnet", perf).message(),
              ::testing::HasSubstr("'nosuchnet' is not in the RaPP table"));
}

}  // namespace
}  // namespace sluice::sim
