// `sim run` of a `kind: llm_serving` file through RunSimCommand: the dispatch on kind, --json,
// --policy, --seed, --out, and the error exits (loader errors exit 2 naming file:line: field;
// --event-log is refused). A small synthetic experiment keeps it fast.
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "nlohmann/json.hpp"
#include "sim/cli/sim_command.h"

namespace sluice::sim {
namespace {

using ::testing::HasSubstr;

constexpr char kExperiment[] =
    "kind: llm_serving\n"
    "duration_s: 20\n"
    "cluster: {preset: blitzscale-b, nodes: 1}\n"
    "functions:\n"
    "  - {name: chat, model: llama2-7b, default_prompt_tokens: 512, default_output_tokens: 8,\n"
    "     workload: {kind: poisson, rate_rps: 2}}\n"
    "policies: [serverless-llm, blitzscale]\n";

std::string WriteTemp(const std::string& name, const std::string& text) {
  const std::string path = absl::StrCat(testing::TempDir(), "/", name);
  std::ofstream(path) << text;
  return path;
}

struct Result {
  int rc;
  std::string out, err;
};

Result RunLlm(const SimRunOptions& o) {
  std::ostringstream out, err;
  const int rc = RunSimCommand(o, out, err);
  return {rc, out.str(), err.str()};
}

TEST(LlmCommandTest, JsonRunsEverySelectedPolicy) {
  SimRunOptions o;
  o.experiment = WriteTemp("llm_cmd.yaml", kExperiment);
  o.json = true;
  o.policies = {"blitzscale"};
  o.seed = 3;
  const Result r = RunLlm(o);
  ASSERT_EQ(r.rc, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["kind"], "llm_serving");
  EXPECT_EQ(j["seed"], 3);
  ASSERT_EQ(j["runs"].size(), 1u);
  EXPECT_EQ(j["runs"][0]["policy"], "blitzscale");
  EXPECT_GT(j["runs"][0]["functions"][0]["requests"].get<int>(), 0);
}

// The binary's clock (a fake here, advancing 0.5 s per read) times each run: wall_s and
// events_per_s are filled; without a clock they stay 0 / null.
TEST(LlmCommandTest, WallClockFillsWallSecondsAndEventsPerSecond) {
  SimRunOptions o;
  o.experiment = WriteTemp("llm_cmd_wall.yaml", kExperiment);
  o.json = true;
  absl::Time t = absl::UnixEpoch();
  o.wall_clock = [&t] { return t += absl::Milliseconds(500); };
  Result r = RunLlm(o);
  ASSERT_EQ(r.rc, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["runs"].size(), 2u);
  for (const auto& run : j["runs"]) {
    EXPECT_EQ(run["wall_s"], 0.5);
    EXPECT_EQ(run["events_per_s"], run["events"].get<double>() / 0.5);
  }
  o.wall_clock = nullptr;
  r = RunLlm(o);
  ASSERT_EQ(r.rc, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["runs"][0]["wall_s"], 0);
  EXPECT_TRUE(j["runs"][0]["events_per_s"].is_null());
}

TEST(LlmCommandTest, TableAndOutDirectory) {
  SimRunOptions o;
  o.experiment = WriteTemp("llm_cmd_out.yaml", kExperiment);
  o.out_dir = absl::StrCat(testing::TempDir(), "/llm_cmd_out");
  const Result r = RunLlm(o);
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_THAT(r.out, HasSubstr("serverless-llm"));
  EXPECT_TRUE(std::filesystem::exists(o.out_dir + "/blitzscale_timeline.csv"));
  EXPECT_TRUE(std::filesystem::exists(o.out_dir + "/summary.csv"));
}

TEST(LlmCommandTest, BadInputExitsTwoNamingTheField) {
  SimRunOptions o;
  o.experiment = WriteTemp("llm_cmd_bad.yaml",
                           std::string(kExperiment) + "bursts: [{function: nope, at_s: 1}]\n");
  Result r = RunLlm(o);
  EXPECT_EQ(r.rc, 2);
  EXPECT_THAT(r.err, HasSubstr("llm_cmd_bad.yaml:8: field 'bursts[0].function'"));
  EXPECT_TRUE(r.out.empty());
  o.experiment = WriteTemp("llm_cmd_ok.yaml", kExperiment);
  o.event_log = true;
  o.out_dir = testing::TempDir();
  r = RunLlm(o);
  EXPECT_EQ(r.rc, 2);
  EXPECT_THAT(r.err, HasSubstr("--event-log"));
  o.event_log = false;
  o.policies = {"allcache"};
  r = RunLlm(o);
  EXPECT_EQ(r.rc, 2);
  EXPECT_THAT(r.err, HasSubstr("allcache"));
}

}  // namespace
}  // namespace sluice::sim
