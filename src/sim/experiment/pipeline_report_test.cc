// Pipeline rows of the report on a hand-made RunResult: JSON keys and values (QUART Fig. 6 / 8b
// quantities), the per-run pipeline and stage tables, the cross-run comparison, and no pipeline
// output for runs without pipelines.
#include "sim/experiment/pipeline_report.h"

#include <cmath>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/experiment/report.h"

namespace sluice::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Not;

SimConfig Config() {
  SimConfig c;
  c.experiment = "quart";
  c.cluster = core::ClusterSpec::Uniform(1, core::NodeSpec{});
  for (int i = 0; i < 2; ++i) {
    FunctionConfig f;
    f.name = "llama/s" + std::to_string(i);
    c.functions.push_back(f);
  }
  PipelineConfig p;
  p.name = "llama";
  p.stages = {"llama/s0", "llama/s1"};
  p.slo = absl::Milliseconds(364.5);
  p.slo_base = absl::Milliseconds(243);
  p.slo_multipliers = {1, 1.5, 3};
  c.pipelines = {p};
  return c;
}

RunResult MakeRun(const std::string& policy, double mean_ms) {
  RunResult r;
  r.policy = policy;
  r.workload = "maf";
  PipelineResult p;
  p.name = "llama";
  p.requests = 100;
  p.completed = 98;
  p.dropped = 2;
  p.mean_ms = mean_ms;
  p.p50_ms = 250;
  p.p75_ms = 300;
  p.p95_ms = 500;
  p.p99_ms = 900;
  p.svr = 0.25;
  p.goodput_rps = 1.25;
  p.held_gpu_seconds = 80;
  p.sweep_slo_satisfaction = {0.125, 0.5, 0.875};
  p.sweep_goodput_rps = {0.25, 1.0, 1.75};
  StageResult s0;
  s0.function = "llama/s0";
  s0.mean_queue_length = 3.5;
  s0.arrival_cv = 2.0;
  s0.utilisation = 0.75;
  s0.mean_replicas = 2.5;
  s0.mean_cpu_workers = 0.5;
  s0.mean_sojourn_ms = 40;
  s0.cold_starts = 2;
  s0.key_stage_ever = true;
  StageResult s1 = s0;
  s1.function = "llama/s1";
  s1.mean_queue_length = NAN;
  s1.key_stage_ever = false;
  s1.mean_transfer_ms = 1.5;
  p.stages = {s0, s1};
  r.pipelines = {p};
  return r;
}

TEST(PipelineReportTest, JsonCarriesLatencyGoodputSweepAndStages) {
  const SimConfig c = Config();
  const nlohmann::ordered_json j = PipelinesJson(c, MakeRun("quart", 280));
  ASSERT_EQ(j.size(), 1u);
  const auto& p = j[0];
  std::vector<std::string> keys;
  for (const auto& [k, v] : p.items()) keys.push_back(k);
  EXPECT_THAT(keys, ElementsAre("name", "requests", "completed", "dropped", "mean_ms", "p50_ms",
                                "p75_ms", "p95_ms", "p99_ms", "svr", "slo_ms", "goodput_rps",
                                "held_gpu_seconds", "slo_sweep", "stages"));
  EXPECT_EQ(p["mean_ms"], 280);
  EXPECT_EQ(p["p75_ms"], 300);
  EXPECT_EQ(p["slo_ms"], 364.5);
  EXPECT_EQ(p["goodput_rps"], 1.25);
  EXPECT_EQ(p["slo_sweep"]["base_ms"], 243);
  EXPECT_EQ(p["slo_sweep"]["multipliers"], nlohmann::ordered_json({1, 1.5, 3}));
  EXPECT_EQ(p["slo_sweep"]["satisfaction"], nlohmann::ordered_json({0.125, 0.5, 0.875}));
  EXPECT_EQ(p["slo_sweep"]["goodput_rps"], nlohmann::ordered_json({0.25, 1.0, 1.75}));
  ASSERT_EQ(p["stages"].size(), 2u);
  EXPECT_EQ(p["stages"][0]["function"], "llama/s0");
  EXPECT_EQ(p["stages"][0]["mean_queue_length"], 3.5);
  EXPECT_EQ(p["stages"][0]["arrival_cv"], 2.0);
  EXPECT_EQ(p["stages"][0]["utilisation"], 0.75);
  EXPECT_EQ(p["stages"][0]["mean_replicas"], 2.5);
  EXPECT_EQ(p["stages"][0]["mean_cpu_workers"], 0.5);
  EXPECT_EQ(p["stages"][0]["key_stage"], true);
  EXPECT_TRUE(p["stages"][1]["mean_queue_length"].is_null());
  EXPECT_EQ(p["stages"][1]["mean_transfer_ms"], 1.5);
}

TEST(PipelineReportTest, SummaryJsonHasPipelinesOnlyWhenTheRunHasThem) {
  const SimConfig c = Config();
  std::vector<RunResult> runs = {MakeRun("quart", 280), RunResult{}};
  const nlohmann::ordered_json j = SummaryJson(c, runs);
  EXPECT_TRUE(j["runs"][0].contains("pipelines"));
  EXPECT_FALSE(j["runs"][1].contains("pipelines"));
}

TEST(PipelineReportTest, TableShowsPipelineRowStageTableAndComparison) {
  const SimConfig c = Config();
  std::vector<RunResult> runs = {MakeRun("infless", 900), MakeRun("quart", 280)};
  const std::string t = SummaryTable(c, runs);
  EXPECT_THAT(t, HasSubstr("pipeline"));
  EXPECT_THAT(t, HasSubstr("SLO satisfaction at x 243 ms: 1x 12.5%, 1.5x 50.0%, 3x 87.5%"));
  EXPECT_THAT(t, HasSubstr("arr CV"));
  EXPECT_THAT(t, HasSubstr("llama/s0"));
  EXPECT_THAT(t, HasSubstr("yes"));
  EXPECT_THAT(t, HasSubstr("2 dropped"));
  EXPECT_THAT(t, HasSubstr("\npipelines\n"));
  EXPECT_THAT(t, HasSubstr("SLO@1.5x %"));
  // quart's comparison row: mean 280, goodput 1.25, SVR 25 %, satisfaction at 1.5x 50 %.
  EXPECT_THAT(t, HasSubstr("280.00"));
  EXPECT_THAT(t, HasSubstr("50.0\n"));
}

TEST(PipelineReportTest, NoPipelinesNoPipelineOutput) {
  SimConfig c = Config();
  c.pipelines.clear();
  RunResult r;
  r.policy = "x";
  std::vector<RunResult> runs = {r, r};
  EXPECT_THAT(SummaryTable(c, runs), Not(HasSubstr("pipelines")));
  std::string out;
  AppendPipelineTables(c, r, out);
  EXPECT_EQ(out, "");
}

}  // namespace
}  // namespace sluice::sim
