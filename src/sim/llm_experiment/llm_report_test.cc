// The llm_serving report on hand-made results: the JSON contract keys (what the experiment ctest
// and scripts/reproduce-blitzscale read), nulls for non-finite values, the table, the CSVs and
// the --out directory.
#include "sim/llm_experiment/llm_report.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::sim::llm {
namespace {

using ::testing::HasSubstr;

LlmSimConfig Config() {
  LlmSimConfig c;
  c.name = "azure-code";
  c.cluster.name = "blitzscale-b";
  c.cluster.nodes = 2;
  LlmFunctionConfig f;
  f.name = "code";
  f.model = "llama2-7b";
  f.tp = 1;
  c.functions.push_back(f);
  return c;
}

LlmRunResult MakeRun(const std::string& policy, double ttft_p99) {
  LlmRunResult r;
  r.policy = policy;
  LlmFunctionResult f;
  f.name = "code";
  f.requests = 100;
  f.completed = 98;
  f.rejected = 2;
  f.ttft_p50_ms = 80;
  f.ttft_p99_ms = ttft_p99;
  f.tbt_p50_ms = 20;
  f.tbt_p99_ms = 45;
  f.slo_attainment = 0.9;
  f.scale_outs = 3;
  f.scale_ins = 2;
  f.mutations = 1;
  f.live_scales = 1;
  f.instance_failures = 1;
  f.requeued = 7;
  r.functions.push_back(f);
  r.gpu_seconds = 1200;
  r.mean_gpus = 4;
  r.peak_gpus = 9;
  r.host_cache_gib_mean = 12.5;
  r.host_cache_gib_peak = 25;
  r.events = 50000;
  r.wall_s = 0.5;
  r.timeline.push_back({0.1, 1000, 500, 1, 1, 0, 2, 12.5, 3.2});
  r.timeline.push_back({0.2, 2000, 600, 2, 1, 1, 3, 12.5, 40});
  return r;
}

TEST(LlmReportTest, JsonHasTheContractKeys) {
  const std::vector<LlmRunResult> runs = {MakeRun("serverless-llm", 900),
                                          MakeRun("blitzscale", NAN)};
  const nlohmann::ordered_json j = LlmSummaryJson(Config(), runs);
  EXPECT_EQ(j["kind"], "llm_serving");
  EXPECT_EQ(j["cluster"]["gpus"], 16);
  ASSERT_EQ(j["runs"].size(), 2u);
  const auto& r = j["runs"][0];
  EXPECT_EQ(r["policy"], "serverless-llm");
  EXPECT_EQ(r["gpu_seconds"], 1200);
  EXPECT_EQ(r["mean_gpus"], 4);
  EXPECT_EQ(r["peak_gpus"], 9);
  EXPECT_EQ(r["host_cache_gib_mean"], 12.5);
  EXPECT_EQ(r["host_cache_gib_peak"], 25);
  EXPECT_EQ(r["events"], 50000);
  EXPECT_EQ(r["events_per_s"], 100000);
  const auto& f = r["functions"][0];
  for (const char* key :
       {"ttft_p50_ms", "ttft_p99_ms", "tbt_p50_ms", "tbt_p99_ms", "slo_attainment", "scale_outs",
        "scale_ins", "mutations", "live_scales", "preemptions", "requests", "completed", "rejected",
        "ttft_slo_ms", "tbt_slo_ms", "model", "instance_failures", "requeued"}) {
    EXPECT_TRUE(f.contains(key)) << key;
  }
  EXPECT_EQ(f["requeued"], 7);
  EXPECT_EQ(f["ttft_p99_ms"], 900);
  EXPECT_EQ(f["ttft_slo_ms"], 450);
  EXPECT_TRUE(j["runs"][1]["functions"][0]["ttft_p99_ms"].is_null());
  // Text form parses back to the same document.
  EXPECT_EQ(nlohmann::ordered_json::parse(LlmSummaryJsonText(Config(), runs)), j);
}

TEST(LlmReportTest, EventsPerSecondIsNullWithoutWallTime) {
  LlmRunResult r = MakeRun("blitzscale", 100);
  r.wall_s = 0;
  EXPECT_TRUE(LlmRunJson(Config(), r)["events_per_s"].is_null());
}

TEST(LlmReportTest, TableShowsEveryRunAndFunction) {
  const std::vector<LlmRunResult> runs = {MakeRun("serverless-llm", 900),
                                          MakeRun("blitzscale", NAN)};
  const std::string t = LlmSummaryTable(Config(), runs);
  EXPECT_THAT(t, HasSubstr("azure-code"));
  EXPECT_THAT(t, HasSubstr("serverless-llm"));
  EXPECT_THAT(t, HasSubstr("900.0"));
  EXPECT_THAT(t, HasSubstr("GPU-s 1200.0"));
  EXPECT_THAT(t, HasSubstr("90.0"));  // slo%
}

TEST(LlmReportTest, CsvsHaveOneRowPerPointAndPerFunction) {
  const LlmRunResult r = MakeRun("blitzscale", 100);
  const std::string timeline = LlmTimelineCsv(r);
  EXPECT_THAT(timeline, HasSubstr("t_s,prefill_tokens_per_s,decode_tokens_per_s"));
  EXPECT_THAT(timeline, HasSubstr("\n0.2,2000,600,2,1,1,3,12.5,40\n"));
  EXPECT_EQ(std::count(timeline.begin(), timeline.end(), '\n'), 3);
  const std::vector<LlmRunResult> runs = {r};
  const std::string summary = LlmSummaryCsv(runs);
  EXPECT_THAT(summary,
              HasSubstr("\nblitzscale,code,100,98,2,80,100,20,45,0.9,3,2,1,1,0,1,7,1200,"));
  EXPECT_EQ(LlmTimelineFileName(r), "blitzscale_timeline.csv");
}

TEST(LlmReportTest, WritesTheOutputDirectory) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) /
      absl::StrCat("llm_report_out_", ::testing::UnitTest::GetInstance()->random_seed());
  std::filesystem::remove_all(dir);
  const std::vector<LlmRunResult> runs = {MakeRun("serverless-llm", 900),
                                          MakeRun("blitzscale", 100)};
  ASSERT_TRUE(WriteLlmOutputDir((dir / "nested").string(), Config(), runs).ok());
  for (const char* name :
       {"summary.json", "summary.csv", "serverless-llm_timeline.csv", "blitzscale_timeline.csv"}) {
    EXPECT_TRUE(std::filesystem::exists(dir / "nested" / name)) << name;
  }
  std::ifstream in(dir / "nested" / "summary.json");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), LlmSummaryJsonText(Config(), runs));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sluice::sim::llm
