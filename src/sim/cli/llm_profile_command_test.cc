// `sim llm-profile` through RunLlmProfileCommand: JSON keys and values agree with the model, the
// text report, and exit code 2 with a message naming the field for bad input.
#include "sim/cli/llm_profile_command.h"

#include <sstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

#include "core/perf/llm_perf_model.h"

namespace sluice::sim {
namespace {

using ::testing::HasSubstr;

struct Result {
  int rc;
  std::string out, err;
};

Result Profile(const std::string& model, const std::string& gpu, int tp, bool json) {
  std::ostringstream out, err;
  SimLlmProfileOptions o{model, gpu, tp, json};
  int rc = RunLlmProfileCommand(o, out, err);
  return {rc, out.str(), err.str()};
}

TEST(LlmProfileCommandTest, JsonMatchesTheModel) {
  Result r = Profile("llama2-70b", "a100", 0, true);
  ASSERT_EQ(r.rc, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  auto m = core::BuiltinLlmModel("llama2-70b");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(j["tp"], 4);
  EXPECT_EQ(j["layers"], 80);
  EXPECT_EQ(j["kv_bytes_per_token"], 327680);
  EXPECT_EQ(j["kv_capacity_tokens"], (*m)->spec().KvCapacityTokens());
  ASSERT_FALSE(j["prefill"].empty());
  const auto& p = j["prefill"][4];
  EXPECT_EQ(p["tokens"], 2048);
  EXPECT_DOUBLE_EQ(p["ms"].get<double>(),
                   absl::ToDoubleMilliseconds((*m)->PrefillTime(2048, 1)));
  const auto& d = j["decode"][0];
  EXPECT_EQ(d["batch"], 1);
  EXPECT_DOUBLE_EQ(d["ms"].get<double>(), absl::ToDoubleMilliseconds((*m)->DecodeTime(1, 512)));
}

TEST(LlmProfileCommandTest, TextNamesTheModelAndTables) {
  Result r = Profile("llama3-8b", "h100", 1, false);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("llama3-8b on h100 x1"));
  EXPECT_THAT(r.out, HasSubstr("128 KiB KV per token"));
  EXPECT_THAT(r.out, HasSubstr("prefill"));
  EXPECT_THAT(r.out, HasSubstr("decode step"));
}

TEST(LlmProfileCommandTest, BadInputExitsTwoNamingTheField) {
  Result unknown = Profile("gpt-5", "a100", 0, false);
  EXPECT_EQ(unknown.rc, 2);
  EXPECT_THAT(unknown.err, HasSubstr("model"));
  EXPECT_TRUE(unknown.out.empty());
  Result small = Profile("llama2-70b", "a100", 1, true);
  EXPECT_EQ(small.rc, 2);
  EXPECT_THAT(small.err, HasSubstr("tp"));
  Result gpu = Profile("llama2-7b", "tpu", 0, true);
  EXPECT_EQ(gpu.rc, 2);
  EXPECT_THAT(gpu.err, HasSubstr("gpu"));
}

}  // namespace
}  // namespace sluice::sim
