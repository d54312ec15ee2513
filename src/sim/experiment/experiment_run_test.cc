// End to end through the engine on the shipped experiments: the JSON contract, determinism,
// the M/M/1 validation against theory, and Exclusive vs MPS-r GPU-seconds on the quickstart.
#include <cstdlib>
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/experiment/experiment_loader.h"
#include "sim/experiment/experiment_runner.h"
#include "sim/experiment/report.h"

namespace sluice::sim {
namespace {

std::string Experiment(const std::string& name) {
  const char* root = std::getenv("SLUICE_SOURCE_DIR");
  return std::string(root != nullptr ? root : ".") + "/experiments/" + name;
}

class ShippedExperimentTest : public ::testing::Test {
 protected:
  struct Outcome {
    SimConfig config;
    ExperimentOutput output;
  };
  Outcome RunFile(const std::string& name, uint64_t seed_delta = 0, bool logs = false) {
    const std::string path = Experiment(name);
    absl::StatusOr<SimConfig> config = LoadExperiment(path, *perf_);
    EXPECT_TRUE(config.ok()) << config.status();
    if (!config.ok()) return {};
    config->seed += seed_delta;
    absl::StatusOr<ExperimentOutput> out = RunExperiment(*config, *perf_, path, logs);
    EXPECT_TRUE(out.ok()) << out.status();
    if (!out.ok()) return {};
    return {*std::move(config), *std::move(out)};
  }
  std::unique_ptr<core::PerfModel> perf_ = core::PerfModel::BuiltIn();
};

TEST_F(ShippedExperimentTest, QuickstartJsonHasEveryContractKey) {
  const Outcome o = RunFile("quickstart.yaml");
  const nlohmann::ordered_json j = SummaryJson(o.config, o.output.runs);
  EXPECT_EQ(j["experiment"], "quickstart");
  ASSERT_EQ(j["runs"].size(), o.config.policies.size());
  for (const auto& run : j["runs"]) {
    for (const char* key : {"policy", "workload", "gpu_seconds", "peak_active_gpus",
                            "mean_active_gpus", "sm_fragmentation", "mem_fragmentation"}) {
      EXPECT_TRUE(run.contains(key)) << key;
    }
    ASSERT_EQ(run["functions"].size(), o.config.functions.size());
    for (const auto& f : run["functions"]) {
      for (const char* key : {"name", "requests", "p50_ms", "p95_ms", "p99_ms", "mean_ms", "svr",
                              "cold_starts", "throughput_rps"}) {
        EXPECT_TRUE(f.contains(key)) << key;
      }
      EXPECT_GT(f["requests"].get<int64_t>(), 0) << f["name"];
    }
  }
}

TEST_F(ShippedExperimentTest, SameSeedGivesIdenticalJsonAndEventLogs) {
  const Outcome a = RunFile("quickstart.yaml", 0, /*logs=*/true);
  const Outcome b = RunFile("quickstart.yaml", 0, /*logs=*/true);
  EXPECT_EQ(SummaryJsonText(a.config, a.output.runs), SummaryJsonText(b.config, b.output.runs));
  EXPECT_EQ(a.output.event_logs, b.output.event_logs);
  // And the comparison can fail: another seed gives other arrivals.
  const Outcome c = RunFile("quickstart.yaml", 1);
  EXPECT_NE(SummaryJsonText(a.config, a.output.runs), SummaryJsonText(c.config, c.output.runs));
}

TEST_F(ShippedExperimentTest, ExclusiveUsesAtLeastAsManyGpuSecondsAsMpsR) {
  const Outcome o = RunFile("quickstart.yaml");
  double exclusive = -1, mps_r = -1;
  for (const RunResult& r : o.output.runs) {
    if (r.policy == "exclusive") exclusive = r.gpu_seconds;
    if (r.policy == "mps-r") mps_r = r.gpu_seconds;
  }
  ASSERT_GT(exclusive, 0);
  ASSERT_GT(mps_r, 0);
  EXPECT_GE(exclusive, mps_r);
}

TEST_F(ShippedExperimentTest, Mm1MeanLatencyIsWithinThreePercentOfTheory) {
  const Outcome o = RunFile("validation-mm1.yaml");
  ASSERT_FALSE(o.output.runs.empty());
  for (const RunResult& r : o.output.runs) {
    ASSERT_EQ(r.functions.size(), 1u);
    const FunctionResult& f = r.functions[0];
    ASSERT_TRUE(f.theory_mean_ms.has_value());
    EXPECT_DOUBLE_EQ(*f.theory_mean_ms, 20.0);  // 1 / (100/s - 50/s)
    EXPECT_GT(f.requests, 10000);
    EXPECT_EQ(f.cold_starts, 0);
    EXPECT_NEAR(f.mean_ms / *f.theory_mean_ms, 1.0, 0.03)
        << "mean " << f.mean_ms << " ms, theory " << *f.theory_mean_ms << " ms, seed "
        << o.config.seed;
  }
  const nlohmann::ordered_json j = SummaryJson(o.config, o.output.runs);
  EXPECT_TRUE(j["runs"][0]["functions"][0].contains("theory_mean_ms"));
}

}  // namespace
}  // namespace sluice::sim
