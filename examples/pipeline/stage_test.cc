// Tests for the pipeline-stage example: config from the environment (per-stage lists, errors
// naming the variable) and one batch (time spent, activation size, trace appended, bad input).
#include "stage.h"

#include <vector>

#include "core/perf/pipeline_profile.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::examples {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

TEST(StageConfigTest, PerStageListsPickTheStagesValue) {
  absl::StatusOr<StageConfig> c = StageConfigFromEnv({{"SLUICE_STAGE_INDEX", "2"},
                                                      {"SLUICE_STAGE_COUNT", "3"},
                                                      {"STAGE_MS", "1,2,30"},
                                                      {"STAGE_MS_PER_ITEM", "0.5"},
                                                      {"ACTIVATION_BYTES", "10,20,30"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->index, 2);
  EXPECT_EQ(c->count, 3);
  EXPECT_EQ(c->BatchTime(4), absl::Milliseconds(32));
  EXPECT_EQ(c->activation_bytes, 30);
}

TEST(StageConfigTest, BadValuesNameTheVariable) {
  EXPECT_THAT(
      StageConfigFromEnv({{"SLUICE_STAGE_COUNT", "3"}, {"STAGE_MS", "1,2"}}).status().message(),
      HasSubstr("STAGE_MS: 2 values for 3 stages"));
  EXPECT_THAT(StageConfigFromEnv({{"SLUICE_STAGE_INDEX", "3"}, {"SLUICE_STAGE_COUNT", "3"}})
                  .status()
                  .message(),
              HasSubstr("SLUICE_STAGE_INDEX 3 is not a stage"));
  EXPECT_THAT(StageConfigFromEnv({{"ACTIVATION_BYTES", "x"}}).status().message(),
              HasSubstr("ACTIVATION_BYTES: 'x' is not a number"));
  EXPECT_THAT(StageConfigFromEnv({{"SLUICE_STAGE_INDEX", "one"}}).status().message(),
              HasSubstr("SLUICE_STAGE_INDEX: 'one' is not an integer"));
}

TEST(StageConfigTest, PipelineModelTakesTheStageTimesFromThePipelineProfile) {
  absl::StatusOr<StageConfig> c = StageConfigFromEnv(
      {{"SLUICE_STAGE_INDEX", "1"}, {"SLUICE_STAGE_COUNT", "4"}, {"PIPELINE_MODEL", "bert-21b"}});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->profile_model, "bert-21b/s1of4");
  // The profile's stage: batch 1 at a whole GPU takes its exec_batch1 (a quarter of Table 1's
  // 137 ms, give or take the split), and bert's activation is 128 positions x 5120 x fp16.
  const std::vector<core::StageProfile> stages = *core::SplitPipeline("bert-21b", 4, "n");
  EXPECT_NEAR(absl::ToDoubleMilliseconds(c->BatchTime(1)),
              absl::ToDoubleMilliseconds(stages[1].exec_batch1), 0.01);
  EXPECT_GT(c->BatchTime(2), c->BatchTime(1));
  EXPECT_EQ(c->activation_bytes, stages[1].activation_out.count());
  EXPECT_EQ(c->activation_bytes, 128 * 5120 * 2);
  // Explicit values still win over the profile's.
  absl::StatusOr<StageConfig> small = StageConfigFromEnv({{"SLUICE_STAGE_INDEX", "3"},
                                                          {"SLUICE_STAGE_COUNT", "4"},
                                                          {"PIPELINE_MODEL", "bert-21b"},
                                                          {"ACTIVATION_BYTES", "64"}});
  ASSERT_TRUE(small.ok()) << small.status();
  EXPECT_EQ(small->activation_bytes, 64);
  EXPECT_NEAR(absl::ToDoubleMilliseconds(small->BatchTime(1)),
              absl::ToDoubleMilliseconds(stages[3].exec_batch1), 0.01);
}

TEST(StageConfigTest, BadPipelineModelNamesTheVariable) {
  EXPECT_THAT(StageConfigFromEnv({{"PIPELINE_MODEL", "gpt-9"}}).status().message(),
              HasSubstr("PIPELINE_MODEL: unknown pipeline model 'gpt-9'"));
  EXPECT_THAT(StageConfigFromEnv({{"SLUICE_STAGE_COUNT", "3"}, {"PIPELINE_MODEL", "bert-21b"}})
                  .status()
                  .message(),
              HasSubstr("SLUICE_STAGE_COUNT"));
}

TEST(StageBatchTest, SpendsTheBatchTimeAndAppendsToTheTrace) {
  StageConfig c;
  c.index = 1;
  c.count = 2;
  c.activation_bytes = 7;
  absl::Duration spent;
  std::vector<runtime::InferRequest> batch = {
      {"a",
       json{{"inputs",
             {{{"name", "activations"}, {"datatype", "BYTES"}, {"shape", {1}}, {"data", {"xxxx"}}},
              {{"name", "trace"}, {"datatype", "BYTES"}, {"shape", {1}}, {"data", {"s0:8"}}}}}}},
      {"b", json{{"outputs", json::array()}}}};
  std::vector<runtime::InferResult> out =
      RunStageBatch(c, batch, [&](absl::Duration d) { spent += d; });
  EXPECT_EQ(spent, c.BatchTime(2));
  ASSERT_EQ(out.size(), 2u);
  ASSERT_EQ(out[0].code, 200) << out[0].error;
  const json& outputs = out[0].body["outputs"];
  EXPECT_EQ(outputs[0]["data"][0].get<std::string>(), "bbbbbbb");
  EXPECT_EQ(outputs[1]["data"][0].get<std::string>(), "s0:8,s1:4");
  EXPECT_EQ(out[0].body["id"], "a");
  EXPECT_EQ(out[1].code, 400);
  EXPECT_THAT(out[1].error, HasSubstr("field 'inputs'"));
}

}  // namespace
}  // namespace sluice::examples
