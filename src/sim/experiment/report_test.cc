// Output formats on hand-made RunResults: the JSON contract's keys and order, the table, CSV
// timelines and the --out directory.
#include "sim/experiment/report.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

SimConfig Config() {
  SimConfig c;
  c.experiment = "demo";
  c.seed = 42;
  c.cluster = core::ClusterSpec::Uniform(2, core::NodeSpec{});
  FunctionConfig bert;
  bert.name = "bert";
  FunctionConfig train;
  train.name = "train";
  train.kind = FunctionKind::kTraining;
  c.functions = {bert, train};
  return c;
}

RunResult MakeRun(const std::string& policy) {
  RunResult r;
  r.policy = policy;
  r.workload = "default";
  r.gpu_seconds = 1234.5;
  r.peak_active_gpus = 5;
  r.mean_active_gpus = 3.25;
  r.sm_fragmentation = 0.125;
  r.mem_fragmentation = 0.5;
  r.events = 999;
  r.held_gpu_seconds = 3600;
  r.cost_usd = 2.48;
  r.cost_per_1k_requests_usd = 2.48;
  FunctionResult bert;
  bert.name = "bert";
  bert.requests = 1000;
  bert.completed = 990;
  bert.dropped = 10;
  bert.p50_ms = 10;
  bert.p95_ms = 20;
  bert.p99_ms = 30;
  bert.mean_ms = 12;
  bert.svr = 0.02;
  bert.cold_starts = 3;
  bert.throughput_rps = 33;
  bert.vertical_scalings = 7;
  bert.held_gpu_seconds = 1800;
  bert.cost_usd = 1.24;
  bert.cost_per_1k_requests_usd = 1.24;
  FunctionResult train;
  train.name = "train";
  train.training_iters_per_s = 2.5;
  train.jct_s = 400;
  r.functions = {bert, train};
  TimelineRow row;
  row.t_s = 1;
  row.active_gpus = 2;
  row.allocated_share = 1.5;
  row.cost_usd = 0.25;
  row.instances = {2, 1};
  row.rps = {30.5, 0};
  r.timeline = {row, row};
  r.timeline[1].t_s = 2;
  return r;
}

std::vector<std::string> Keys(const nlohmann::ordered_json& j) {
  std::vector<std::string> keys;
  for (auto it = j.begin(); it != j.end(); ++it) keys.push_back(it.key());
  return keys;
}

TEST(ReportTest, JsonFollowsTheContract) {
  const std::vector<RunResult> runs = {MakeRun("exclusive"), MakeRun("mps-r")};
  const nlohmann::ordered_json j = SummaryJson(Config(), runs);
  EXPECT_THAT(Keys(j), ElementsAre("experiment", "seed", "runs"));
  EXPECT_EQ(j["experiment"], "demo");
  EXPECT_EQ(j["seed"], 42);
  ASSERT_EQ(j["runs"].size(), 2u);
  const auto& run = j["runs"][1];
  EXPECT_THAT(Keys(run), ElementsAre("policy", "workload", "gpu_seconds", "held_gpu_seconds",
                                     "cost_usd", "cost_per_1k_requests_usd", "peak_active_gpus",
                                     "mean_active_gpus", "sm_fragmentation", "mem_fragmentation",
                                     "fgd_fragmentation", "events", "svr", "requests",
                                     "cold_starts", "idle_memory_gib_s", "cold_start_wait_s",
                                     "cold_start_ms_per_request", "functions"));
  EXPECT_EQ(run["policy"], "mps-r");
  EXPECT_EQ(run["gpu_seconds"], 1234.5);
  EXPECT_EQ(run["cost_usd"], 2.48);
  EXPECT_EQ(run["cost_per_1k_requests_usd"], 2.48);
  const auto& bert = run["functions"][0];
  EXPECT_THAT(Keys(bert), ElementsAre("name", "requests", "p50_ms", "p95_ms", "p99_ms", "mean_ms",
                                      "svr", "cold_starts", "throughput_rps", "completed",
                                      "dropped", "vertical_scalings", "rejected_actions",
                                      "held_gpu_seconds", "cost_usd", "cost_per_1k_requests_usd",
                                      "idle_memory_gib_s", "cold_start_wait_s",
                                      "cold_start_ms_per_request", "parks", "unparks"));
  EXPECT_EQ(bert["svr"], 0.02);
  EXPECT_EQ(bert["vertical_scalings"], 7);
  EXPECT_EQ(bert["cost_usd"], 1.24);
  EXPECT_EQ(bert["cost_per_1k_requests_usd"], 1.24);
  const auto& train = run["functions"][1];
  EXPECT_EQ(train["training_iters_per_s"], 2.5);
  EXPECT_EQ(train["jct_s"], 400);
}

TEST(ReportTest, TheoryMeanAppearsOnlyWhenComputedAndNanIsNull) {
  RunResult r = MakeRun("exclusive");
  r.functions[0].theory_mean_ms = 20.0;
  r.functions[0].p99_ms = std::nan("");
  const nlohmann::ordered_json j = RunJson(Config(), r);
  EXPECT_EQ(j["functions"][0]["theory_mean_ms"], 20.0);
  EXPECT_TRUE(j["functions"][0]["p99_ms"].is_null());
  EXPECT_FALSE(j["functions"][1].contains("theory_mean_ms"));
  const std::string table = SummaryTable(Config(), std::vector<RunResult>{r});
  EXPECT_THAT(table, HasSubstr("M/M/1 theory 20.000 ms (-40.00 %)"));
}

TEST(ReportTest, TextIsDeterministicAndParsesBack) {
  const std::vector<RunResult> runs = {MakeRun("exclusive")};
  const std::string a = SummaryJsonText(Config(), runs);
  EXPECT_EQ(a, SummaryJsonText(Config(), runs));
  EXPECT_EQ(nlohmann::json::parse(a)["runs"][0]["functions"][0]["requests"], 1000);
  EXPECT_EQ(a.back(), '\n');
}

TEST(ReportTest, TableHasOneBlockPerRunAndAComparison) {
  const std::vector<RunResult> runs = {MakeRun("exclusive"), MakeRun("mps-r")};
  const std::string t = SummaryTable(Config(), runs);
  EXPECT_THAT(t, HasSubstr("experiment demo: seed 42"));
  EXPECT_THAT(t, HasSubstr("2 nodes, 8 GPUs"));
  EXPECT_THAT(t, HasSubstr("policy mps-r, workload default"));
  EXPECT_THAT(t, HasSubstr("GPU-seconds 1234.5 | active GPUs peak 5, mean 3.25"));
  EXPECT_THAT(t, HasSubstr("  bert          1000     10.00     20.00     30.00    2.00      3     7"
                           "     33.00    1.2400"));
  EXPECT_THAT(t, HasSubstr("cost $2.4800 for 3600.0 GPU-seconds held | $2.4800 per 1K requests"));
  EXPECT_THAT(t, HasSubstr("    2.4800    2.4800\n"));  // summary: cost $, $/1K req
  for (absl::string_view line : absl::StrSplit(t, '\n'))
    EXPECT_LE(line.size(), 100u) << line;
  EXPECT_THAT(t, HasSubstr("train    training: 2.500 iterations/s, JCT 400.0 s"));
  EXPECT_THAT(t, HasSubstr("10 dropped"));
  EXPECT_THAT(t, HasSubstr("summary"));
}

TEST(ReportTest, TimelineCsvHasAColumnPerFunction) {
  const std::string csv = TimelineCsv(Config(), MakeRun("exclusive"));
  std::istringstream in(csv);
  std::string header, row1, row2, extra;
  std::getline(in, header);
  std::getline(in, row1);
  std::getline(in, row2);
  EXPECT_EQ(header,
            "t_s,active_gpus,allocated_share,sm_fragmentation,mem_fragmentation,cost_usd,"
            "bert_instances,train_instances,bert_rps,train_rps");
  EXPECT_EQ(row1, "1.000000,2,1.5,0,0,0.25,2,1,30.5,0");
  EXPECT_THAT(row2, HasSubstr("2.000000,"));
  EXPECT_FALSE(std::getline(in, extra));
  EXPECT_EQ(TimelineFileName(MakeRun("MPS-l")), "MPS-l_default_timeline.csv");
}

TEST(ReportTest, SummaryCsvHasOneRowPerRunWithTheParetoFields) {
  RunResult r = MakeRun("sluice");
  r.idle_memory_gib_s = 7200;
  r.cold_start_wait_s = 3;
  r.cold_start_ms_per_request = 0.5;
  std::istringstream in(SummaryCsv(std::vector<RunResult>{r}));
  std::string header, row, extra;
  std::getline(in, header);
  std::getline(in, row);
  EXPECT_EQ(header,
            "policy,workload,requests,svr,cold_starts,mean_active_gpus,peak_active_gpus,"
            "gpu_seconds,held_gpu_seconds,cost_usd,cost_per_1k_requests_usd,idle_memory_gib_s,"
            "cold_start_wait_s,cold_start_ms_per_request,events");
  EXPECT_THAT(row, testing::StartsWith("sluice,default,"));
  EXPECT_THAT(row, HasSubstr(",3.25,"));  // mean active GPUs
  EXPECT_THAT(row, HasSubstr(",7200,3,0.5,"));
  EXPECT_FALSE(std::getline(in, extra));
}

TEST(ReportTest, WriteOutputDirWritesSummaryAndTimelines) {
  const std::filesystem::path dir = std::filesystem::path(testing::TempDir()) / "report_out" / "x";
  std::filesystem::remove_all(dir);
  const std::vector<RunResult> runs = {MakeRun("exclusive"), MakeRun("mps-r")};
  ASSERT_TRUE(WriteOutputDir(dir.string(), Config(), runs).ok());
  std::ifstream summary(dir / "summary.json");
  std::stringstream text;
  text << summary.rdbuf();
  EXPECT_EQ(text.str(), SummaryJsonText(Config(), runs));
  EXPECT_TRUE(std::filesystem::exists(dir / "exclusive_default_timeline.csv"));
  EXPECT_TRUE(std::filesystem::exists(dir / "mps-r_default_timeline.csv"));
  std::ifstream csv(dir / "summary.csv");
  std::stringstream csv_text;
  csv_text << csv.rdbuf();
  EXPECT_EQ(csv_text.str(), SummaryCsv(runs));
  const absl::Status bad = WriteOutputDir("/proc/no/such/dir", Config(), runs);
  EXPECT_FALSE(bad.ok());
  EXPECT_THAT(bad.message(), HasSubstr("/proc/no/such/dir"));
}

}  // namespace
}  // namespace sluice::sim
