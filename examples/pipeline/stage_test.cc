// Tests for the pipeline-stage example: config from the environment (per-stage lists, errors
// naming the variable) and one batch (time spent, activation size, trace appended, bad input).
#include "stage.h"

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
