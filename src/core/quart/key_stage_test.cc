// Unit tests for key-stage detection.
#include "core/quart/key_stage.h"

#include "gtest/gtest.h"

namespace sluice::core {
namespace {

StageLoad Stage(double lambda, double mu, int r) {
  StageLoad s;
  s.arrival_rps = lambda;
  s.service_rps = mu;
  s.replicas = r;
  return s;
}

TEST(KeyStage, BalancedPipelineHasNoKeyStage) {
  std::vector<StageLoad> stages(4, Stage(5.0, 10.0, 2));
  const auto est = EstimateStages(stages, KeyStageConfig{});
  EXPECT_TRUE(KeyStages(est).empty());
  for (const auto& e : est)
    EXPECT_NEAR(e.share, 0.25, 1e-9);
}

TEST(KeyStage, CongestedStageIsKey) {
  std::vector<StageLoad> stages(8, Stage(5.0, 10.0, 2));
  stages[3] = Stage(5.0, 10.0, 1);  // rho 0.5 on one replica: wait 0.1 s vs 0.0067 s elsewhere
  stages[3].queue_length = 6;       // and a queue measured behind it
  const auto est = EstimateStages(stages, KeyStageConfig{});
  EXPECT_EQ(KeyStages(est), std::vector<int>{3});
  EXPECT_GT(est[3].share, 1.5 / 8);
}

TEST(KeyStage, UnstableStageIsCappedAndKey) {
  std::vector<StageLoad> stages(4, Stage(5.0, 10.0, 2));
  stages[1] = Stage(30.0, 10.0, 2);
  const auto est = EstimateStages(stages, KeyStageConfig{});
  EXPECT_EQ(est[1].wait, 0.5 * absl::Seconds(10));  // model capped; nothing measured
  EXPECT_EQ(KeyStages(est), std::vector<int>{1});
}

TEST(KeyStage, MeasuredLatencyRaisesTheEstimate) {
  std::vector<StageLoad> stages(4, Stage(5.0, 10.0, 2));
  stages[2].measured_latency = absl::Seconds(2);  // the model says ~0.1 s; reality disagrees
  KeyStageConfig c;
  const auto est = EstimateStages(stages, c);
  EXPECT_EQ(KeyStages(est), std::vector<int>{2});
  c.model_weight = 1.0;  // model only: the measurement is ignored
  EXPECT_TRUE(KeyStages(EstimateStages(stages, c)).empty());
}

TEST(KeyStage, ValidationNamesTheField) {
  KeyStageConfig c;
  c.model_weight = 1.5;
  EXPECT_NE(ValidateKeyStageConfig(c).message().find("model_weight"), std::string::npos);
  c = {};
  c.key_share_factor = 0.5;
  EXPECT_NE(ValidateKeyStageConfig(c).message().find("key_share_factor"), std::string::npos);
  c = {};
  c.unstable_wait_cap = absl::ZeroDuration();
  EXPECT_NE(ValidateKeyStageConfig(c).message().find("unstable_wait_cap"), std::string::npos);
  EXPECT_TRUE(ValidateKeyStageConfig(KeyStageConfig{}).ok());
}

}  // namespace
}  // namespace sluice::core
