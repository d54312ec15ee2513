// The SLO sweep (HAS-GPU Fig. 6): `slo_sweep:` parsing and its errors, each function's base
// latency, the SVR at each threshold (FunctionMetrics) and the JSON the report writes.
#include "sim/experiment/slo_sweep.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/engine/metrics.h"
#include "sim/experiment/experiment_loader.h"
#include "sim/experiment/report.h"

namespace sluice::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Experiment(const std::string& sweep) {
  return absl::StrCat(
      "experiment: t\n"                                          // 1
      "cluster: {nodes: 1, gpus_per_node: 1, gpu: A100-40GB}\n"  // 2
      "policies: [exclusive]\n"                                   // 3
      "functions:\n"                                              // 4
      "  - name: f\n"                                             // 5
      "    model: resnet152\n"                                    // 6
      "    workload: {kind: poisson, rate_rps: 10}\n",            // 7
      sweep);                                                     // 8
}

class SloSweepTest : public ::testing::Test {
 protected:
  absl::StatusOr<SimConfig> Parse(const std::string& yaml) {
    return ParseExperiment(yaml, "exp.yaml", *perf_);
  }
  std::unique_ptr<core::PerfModel> perf_ = core::PerfModel::BuiltIn();
};

TEST_F(SloSweepTest, GivesEachInferenceFunctionTheMultipliersAndItsShortestLatency) {
  absl::StatusOr<SimConfig> c = Parse(Experiment("slo_sweep: {from: 1, to: 2, step: 0.25}\n"));
  ASSERT_TRUE(c.ok()) << c.status();
  const FunctionConfig& f = c->functions[0];
  EXPECT_THAT(f.slo_sweep_multipliers, ElementsAre(1, 1.25, 1.5, 1.75, 2));
  const double shortest =
      absl::ToDoubleMilliseconds((*perf_->Find("resnet152"))->latency->BatchLatency(1, 1, 1));
  EXPECT_GT(shortest, 0);
  EXPECT_DOUBLE_EQ(f.slo_sweep_base_ms, shortest);
}

TEST_F(SloSweepTest, AbsentMeansNoSweep) {
  absl::StatusOr<SimConfig> c = Parse(Experiment(""));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->functions[0].slo_sweep_multipliers.empty());
}

TEST_F(SloSweepTest, BadValuesNameTheField) {
  const auto error = [&](const std::string& sweep) {
    absl::StatusOr<SimConfig> c = Parse(Experiment(sweep));
    EXPECT_FALSE(c.ok()) << sweep;
    return c.ok() ? std::string() : std::string(c.status().message());
  };
  EXPECT_THAT(error("slo_sweep: {from: 0}\n"), HasSubstr("exp.yaml:8: field 'slo_sweep.from'"));
  EXPECT_THAT(error("slo_sweep: {from: 3, to: 2}\n"),
              HasSubstr("field 'slo_sweep.to': must be >= from"));
  EXPECT_THAT(error("slo_sweep: {step: -1}\n"), HasSubstr("field 'slo_sweep.step'"));
  EXPECT_THAT(error("slo_sweep: {step: 0.0001}\n"), HasSubstr("at most 1000"));
  EXPECT_THAT(error("slo_sweep: {form: 1}\n"), HasSubstr("slo_sweep"));
}

TEST(SloSweepMetricsTest, CountsLatenciesAboveEachThresholdPlusDrops) {
  FunctionMetrics m(absl::Milliseconds(30), {10, 20, 40});
  for (int i = 0; i < 5; ++i) m.OnArrival();
  for (const double ms : {5.0, 15.0, 20.0, 35.0}) m.OnCompletion(absl::Milliseconds(ms));
  m.OnDrop(1);
  const FunctionResult r = m.Summarize("f", absl::Seconds(1));
  // > 10 ms: 15, 20, 35 + 1 drop; > 20 ms: 35 + drop (20 is not over); > 40 ms: the drop.
  EXPECT_THAT(r.sweep_svr, ElementsAre(0.8, 0.4, 0.2));
  EXPECT_DOUBLE_EQ(r.svr, 0.4);
}

TEST_F(SloSweepTest, ReportWritesBaseMultipliersAndSvr) {
  absl::StatusOr<SimConfig> c = Parse(Experiment("slo_sweep: {from: 1, to: 1.5, step: 0.5}\n"));
  ASSERT_TRUE(c.ok()) << c.status();
  RunResult run;
  FunctionResult f;
  f.name = "f";
  f.sweep_svr = {0.5, 0.25};
  run.functions.push_back(f);
  const nlohmann::ordered_json j = RunJson(*c, run);
  const nlohmann::ordered_json& s = j["functions"][0]["slo_sweep"];
  EXPECT_DOUBLE_EQ(s["base_ms"].get<double>(), c->functions[0].slo_sweep_base_ms);
  EXPECT_EQ(s["multipliers"], nlohmann::ordered_json::parse("[1.0, 1.5]"));
  EXPECT_EQ(s["svr"], nlohmann::ordered_json::parse("[0.5, 0.25]"));
}

}  // namespace
}  // namespace sluice::sim
