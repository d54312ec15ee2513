// Experiment loader: the schema mapped onto SimConfig, and every bad-input class with the exact
// file:line: field of its message. Fixtures are strings; line numbers are counted from 1.
#include "sim/experiment/experiment_loader.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::sim {
namespace {

using ::testing::HasSubstr;

class LoaderTest : public ::testing::Test {
 protected:
  absl::StatusOr<SimConfig> Parse(const std::string& yaml) {
    return ParseExperiment(yaml, "dir/exp.yaml", *perf_);
  }
  // The message of a parse that must fail with InvalidArgument.
  std::string Error(const std::string& yaml) {
    absl::StatusOr<SimConfig> c = Parse(yaml);
    EXPECT_FALSE(c.ok()) << "parsed:\n" << yaml;
    if (c.ok()) return "";
    EXPECT_TRUE(absl::IsInvalidArgument(c.status())) << c.status();
    return std::string(c.status().message());
  }
  // A valid experiment with one inference function whose function body ends with `extra`
  // (lines 8+).
  static std::string WithFunction(const std::string& extra, const std::string& tail = "") {
    return absl::StrCat(
        "experiment: t\n"                                            // 1
        "cluster: {nodes: 1, gpus_per_node: 2, gpu: A100-40GB}\n"    // 2
        "policies: [exclusive]\n"                                     // 3
        "functions:\n"                                                // 4
        "  - name: f\n"                                               // 5
        "    model: resnet152\n"                                      // 6
        "    workload: {kind: poisson, rate_rps: 10}\n",              // 7
        extra, tail);
  }
  std::unique_ptr<core::PerfModel> perf_ = core::PerfModel::BuiltIn();
};

TEST_F(LoaderTest, MapsTheFullSchemaOntoSimConfig) {
  absl::StatusOr<SimConfig> c = Parse(R"(experiment: quick
seed: 7
horizon_s: 300
sample_interval_s: 2
cluster: {nodes: 2, gpus_per_node: 4, gpu: {model: A100-40GB, sm_count: 108, memory_gib: 40},
          cpu_cores: 64, host_memory_gib: 256, storage_gbps: 2, pcie_gbps: 16}
cold_start: {container_start_s: 3, host_cache: false}
functions:
  - name: bert
    model: bert-base
    kind: inference
    slo_ms: 100
    batching: {max_batch: 8, max_queue_delay_ms: 10}
    quota: {request: 0.3, limit: 0.6}
    memory_gib: 2
    instances: {min: 0, max: 8, initial: 1}
    workload: {kind: poisson, rate_rps: 40}
  - name: resnet-train
    model: resnet152
    kind: training
    training: {workers: 2, iterations: 2000, submit_at_s: 10}
policies:
  - exclusive
  - {name: mps-r}
  - {name: mps-l, label: MPS-l}
workloads:
  - name: bursty
    functions: {bert: {kind: gamma, rate_rps: 20, cv: 4}}
)");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->experiment, "quick");
  EXPECT_EQ(c->seed, 7u);
  EXPECT_EQ(c->horizon, absl::Seconds(300));
  EXPECT_EQ(c->sample_interval, absl::Seconds(2));
  ASSERT_EQ(c->cluster.nodes.size(), 2u);
  EXPECT_EQ(c->cluster.nodes[1].gpu_count, 4);
  EXPECT_EQ(c->cluster.nodes[1].gpu.memory, core::Bytes::GiB(40));
  EXPECT_EQ(c->cold_start.container_start, absl::Seconds(3));
  EXPECT_FALSE(c->cold_start.host_cache);
  ASSERT_EQ(c->functions.size(), 2u);
  const FunctionConfig& bert = c->functions[0];
  EXPECT_EQ(bert.max_batch, 8);
  EXPECT_EQ(bert.max_queue_delay, absl::Milliseconds(10));
  EXPECT_EQ(bert.quota, (core::SmQuota{0.3, 0.6}));
  EXPECT_EQ(bert.memory, core::Bytes::GiB(2));
  EXPECT_EQ(bert.max_instances, 8);
  EXPECT_EQ(bert.workload.kind, WorkloadKind::kPoisson);
  EXPECT_EQ(bert.workload.rate_rps, 40);
  const FunctionConfig& train = c->functions[1];
  EXPECT_EQ(train.kind, core::FunctionKind::kTraining);
  ASSERT_TRUE(train.training.has_value());
  EXPECT_EQ(train.training->workers, 2);
  EXPECT_EQ(train.training->iterations, 2000);
  EXPECT_EQ(train.training->submit_at, absl::Seconds(10));
  ASSERT_EQ(c->policies.size(), 3u);
  EXPECT_EQ(c->policies[0].label, "exclusive");
  EXPECT_EQ(c->policies[2].name, "mps-l");
  EXPECT_EQ(c->policies[2].label, "MPS-l");
  ASSERT_EQ(c->workloads.size(), 1u);
  ASSERT_EQ(c->workloads[0].overrides.size(), 1u);
  EXPECT_EQ(c->workloads[0].overrides[0].second.kind, WorkloadKind::kGamma);
}

TEST_F(LoaderTest, DefaultsComeFromThePerfModel) {
  absl::StatusOr<SimConfig> c = Parse(WithFunction(""));
  ASSERT_TRUE(c.ok()) << c.status();
  const FunctionConfig& f = c->functions[0];
  const core::ModelEntry* model = *perf_->Find("resnet152");
  EXPECT_EQ(f.memory, model->info.gpu_memory);
  EXPECT_GT(f.quota.request, 0);
  EXPECT_LE(f.quota.request, f.quota.limit);
  EXPECT_LE(f.quota.limit, 1.0);
  EXPECT_EQ(f.initial_instances, 1);
  EXPECT_EQ(c->experiment, "t");
  absl::StatusOr<SimConfig> unnamed = Parse(WithFunction("").substr(14));  // drops line 1
  ASSERT_TRUE(unnamed.ok()) << unnamed.status();
  EXPECT_EQ(unnamed->experiment, "exp");  // the file's stem
}

TEST_F(LoaderTest, MalformedYamlNamesTheLine) {
  EXPECT_THAT(Error("experiment: t\nfunctions:\n  - name: [a, b\n  - x: 1\n"),
              HasSubstr("dir/exp.yaml:4: malformed YAML"));
  EXPECT_THAT(Error(""), HasSubstr("dir/exp.yaml: field '<top level>': must be a map"));
}

TEST_F(LoaderTest, UnknownFieldsAtEveryLevel) {
  EXPECT_THAT(Error(WithFunction("", "colour: red\n")),
              HasSubstr("dir/exp.yaml:8: field 'colour': unknown field"));
  EXPECT_THAT(Error(WithFunction("    modle: x\n")),
              HasSubstr("dir/exp.yaml:8: field 'functions[0].modle': unknown field"));
  EXPECT_THAT(Error(WithFunction("    batching: {max_bach: 2}\n")),
              HasSubstr("dir/exp.yaml:8: field 'functions[0].batching.max_bach': unknown field"));
  EXPECT_THAT(Error(WithFunction("", "cold_start: {warm: 1}\n")),
              HasSubstr("dir/exp.yaml:8: field 'cold_start.warm': unknown field"));
  EXPECT_THAT(Error(absl::StrCat("cluster: {nodes: 1, gpu: {model: X, sm_count: 1, memory_gib: 1,"
                                 " clock: 2}}\n")),
              HasSubstr("dir/exp.yaml:1: field 'cluster.gpu.clock': unknown field"));
  EXPECT_THAT(Error(WithFunction("    workload2: 1\n")),
              HasSubstr("dir/exp.yaml:8: field 'functions[0].workload2'"));
  EXPECT_THAT(Error(WithFunction("    slo_ms: 5\n    slo_ms: 6\n")),
              HasSubstr("dir/exp.yaml:9: field 'functions[0].slo_ms': duplicate field"));
}

TEST_F(LoaderTest, OnlySimulationExperimentsLoadHere) {
  EXPECT_TRUE(Parse(WithFunction("", "kind: simulation\n")).ok());
  EXPECT_THAT(Error(WithFunction("", "kind: placement_replay\n")),
              HasSubstr("dir/exp.yaml:8: field 'kind': 'placement_replay' is not a simulation "
                        "experiment"));
}

TEST_F(LoaderTest, WrongTypes) {
  EXPECT_THAT(Error(WithFunction("    slo_ms: fast\n")),
              HasSubstr("dir/exp.yaml:8: field 'functions[0].slo_ms': must be a number"));
  EXPECT_THAT(Error(WithFunction("    gpus: 1.5\n")),
              HasSubstr("dir/exp.yaml:8: field 'functions[0].gpus': must be an integer"));
  EXPECT_THAT(Error(WithFunction("    batching: 4\n")),
              HasSubstr("dir/exp.yaml:8: field 'functions[0].batching': must be a map"));
  EXPECT_THAT(Error(WithFunction("", "cold_start: {host_cache: maybe}\n")),
              HasSubstr("dir/exp.yaml:8: field 'cold_start.host_cache': must be true or false"));
  EXPECT_THAT(Error(WithFunction("", "seed: [1]\n")),
              HasSubstr("dir/exp.yaml:8: field 'seed': must be a single value"));
  EXPECT_THAT(Error(WithFunction("    kind: serving\n")),
              HasSubstr("dir/exp.yaml:8: field 'functions[0].kind': unknown kind 'serving'"));
}

TEST_F(LoaderTest, ImpossibleValues) {
  EXPECT_THAT(Error(absl::StrCat("experiment: t\ncluster: {nodes: 1, gpus_per_node: 2, gpu: A100-40GB}\n"
                                 "policies: [exclusive]\nfunctions:\n  - name: f\n"
                                 "    model: resnet152\n"
                                 "    workload: {kind: poisson, rate_rps: -5}\n")),
              HasSubstr("dir/exp.yaml:7: field 'functions[0].workload.rate_rps': must be >= 0"));
  EXPECT_THAT(Error(WithFunction("    slo_ms: 0\n")),
              HasSubstr("dir/exp.yaml:8: field 'functions[0].slo_ms': must be > 0"));
  EXPECT_THAT(Error(WithFunction("    batching: {max_batch: 0}\n")),
              HasSubstr("dir/exp.yaml:8: field 'functions[0].batching.max_batch': must be > 0"));
  EXPECT_THAT(Error(WithFunction("    memory_gib: -1\n")),
              HasSubstr("dir/exp.yaml:8: field 'functions[0].memory_gib': must be > 0"));
  EXPECT_THAT(Error("cluster: {nodes: 1, gpu: A100-40GB, storage_gbps: 0}\n"),
              HasSubstr("dir/exp.yaml:1: field 'cluster.storage_gbps': must be > 0"));
  EXPECT_THAT(Error("cluster: {nodes: 0, gpu: A100-40GB}\n"),
              HasSubstr("dir/exp.yaml:1: field 'cluster.nodes': must be > 0"));
  EXPECT_THAT(Error(WithFunction("", "horizon_s: 0\n")),
              HasSubstr("dir/exp.yaml:8: field 'horizon_s': must be > 0"));
  EXPECT_THAT(Error(WithFunction("", "horizon_s: 10\nsample_interval_s: 20\n")),
              HasSubstr("dir/exp.yaml:9: field 'sample_interval_s': must be <= horizon_s"));
}

TEST_F(LoaderTest, QuotaAndInstanceBounds) {
  EXPECT_THAT(Error(WithFunction("    quota: {request: 0.7,\n             limit: 0.5}\n")),
              HasSubstr("dir/exp.yaml:8: field 'functions[0].quota.request': request (0.7) > "
                        "limit (0.5)"));
  EXPECT_THAT(Error(WithFunction("    quota: {request: 0.5, limit: 1.5}\n")),
              HasSubstr("dir/exp.yaml:8: field 'functions[0].quota.limit': must be in (0, 1]"));
  EXPECT_THAT(Error(WithFunction("    quota: {request: 0.5}\n")),
              HasSubstr("field 'functions[0].quota.limit': required field is missing"));
  EXPECT_THAT(Error(WithFunction("    instances: {min: 3, max: 2}\n")),
              HasSubstr("dir/exp.yaml:8: field 'functions[0].instances.min': min (3) > max (2)"));
  EXPECT_THAT(Error(WithFunction("    instances: {min: 1, max: 2, initial: 5}\n")),
              HasSubstr("dir/exp.yaml:8: field 'functions[0].instances.initial': must be in"));
}

TEST_F(LoaderTest, ModelsMustExistAndFitSomeGpu) {
  EXPECT_THAT(Error(WithFunction("").replace(WithFunction("").find("resnet152"), 9, "resnet9000")),
              HasSubstr("dir/exp.yaml:6: field 'functions[0].model': unknown model 'resnet9000'"));
  EXPECT_THAT(Error(WithFunction("    memory_gib: 41\n")),
              HasSubstr("dir/exp.yaml:8: field 'functions[0].memory_gib': needs 41.00 GiB per "
                        "GPU but the largest GPU has 40.00 GiB"));
  // The model's own footprint on a GPU smaller than it: rejected, unless sharded over 2 GPUs.
  const double footprint = (*perf_->Find("llama2-7b"))->info.gpu_memory.gib();
  const std::string small_gpu = absl::StrFormat(
      "experiment: t\ncluster: {nodes: 1, gpus_per_node: 2, gpu: {model: small, sm_count: 10, "
      "memory_gib: %.3f}}\npolicies: [exclusive]\nfunctions:\n  - name: f\n    model: llama2-7b\n"
      "    workload: {kind: poisson, rate_rps: 1}\n",
      footprint * 0.6);
  EXPECT_THAT(Error(small_gpu), HasSubstr("dir/exp.yaml:6: field 'functions[0].model': needs"));
  // (An LLM's default 100 ms SLO is 0.8 ms per output token, which the profiler rejects.)
  absl::StatusOr<SimConfig> sharded = Parse(small_gpu + "    gpus: 2\n    slo_ms: 20000\n");
  ASSERT_TRUE(sharded.ok()) << sharded.status();
  EXPECT_EQ(sharded->functions[0].gpus, 2);
  EXPECT_THAT(Error(small_gpu + "    gpus: 3\n"),
              HasSubstr("dir/exp.yaml:8: field 'functions[0].gpus': needs 3 GPUs but the "
                        "cluster has 2"));
}

TEST_F(LoaderTest, DuplicateAndDanglingNames) {
  EXPECT_THAT(Error(WithFunction("  - name: f\n    model: vgg19\n"
                                 "    workload: {kind: poisson, rate_rps: 1}\n")),
              HasSubstr("dir/exp.yaml:8: field 'functions[1].name': duplicate function name 'f'"));
  EXPECT_THAT(Error(WithFunction("", "workloads:\n  - name: w\n"
                                     "    functions: {g: {kind: poisson, rate_rps: 1}}\n")),
              HasSubstr("dir/exp.yaml:10: field 'workloads[0].functions.g': no such function"));
  EXPECT_THAT(Error(WithFunction("", "workloads:\n  - {name: w, functions: {}}\n"
                                     "  - {name: w, functions: {}}\n")),
              HasSubstr("dir/exp.yaml:10: field 'workloads[1].name': duplicate workload name"));
  EXPECT_THAT(Error(WithFunction("", "workloads:\n  - {name: 'a b', functions: {}}\n")),
              HasSubstr("dir/exp.yaml:9: field 'workloads[0].name': 'a b' is not a valid name"));
}

TEST_F(LoaderTest, PoliciesAreCheckedAgainstTheRegistry) {
  const std::string base = WithFunction("");
  const std::string no_policies = base.substr(0, base.find("policies")) +
                                  base.substr(base.find("functions:"));
  EXPECT_THAT(Error(no_policies + "policies:\n  - exclusive\n  - warp-drive\n"),
              HasSubstr("dir/exp.yaml:9: field 'policies[1].name'"));
  EXPECT_THAT(Error(no_policies + "policies:\n  - exclusive\n  - warp-drive\n"),
              HasSubstr("warp-drive"));
  EXPECT_THAT(Error(no_policies + "policies:\n  - {name: mps-r, bogus_knob: 3}\n"),
              HasSubstr("dir/exp.yaml:8"));
  EXPECT_THAT(Error(no_policies + "policies:\n  - {name: mps-r, bogus_knob: 3}\n"),
              HasSubstr("bogus_knob"));
  EXPECT_THAT(Error(no_policies + "policies:\n  - mps-r\n  - mps-r\n"),
              HasSubstr("dir/exp.yaml:9: field 'policies[1]': duplicate policy label 'mps-r'"));
  EXPECT_THAT(Error(no_policies + "policies: []\n"),
              HasSubstr("dir/exp.yaml:7: field 'policies': must be a non-empty list"));
}

// Regression: a policy map whose `name` is not its first key, with params after it, used to
// corrupt the map while it was walked (yaml-cpp Node assignment) and crash.
TEST_F(LoaderTest, PolicyMapKeysInAnyOrder) {
  const std::string base = WithFunction("");
  const std::string no_policies = base.substr(0, base.find("policies")) +
                                  base.substr(base.find("functions:"));
  absl::StatusOr<SimConfig> c = Parse(
      no_policies +
      "policies:\n  - {label: d, name: dilu, eta_violation: 1000, eta_violation_llm: 1000}\n"
      "  - fast-gs+\n  - infless+\n");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->policies.size(), 3u);
  EXPECT_EQ(c->policies[0].name, "dilu");
  EXPECT_EQ(c->policies[0].label, "d");
  EXPECT_EQ(c->policies[0].params.size(), 2u);
  EXPECT_EQ(c->policies[1].label, "fast-gs+");
}

TEST_F(LoaderTest, KindSpecificFields) {
  const std::string train = absl::StrCat(
      "cluster: {nodes: 2, gpus_per_node: 2, gpu: A100-40GB}\npolicies: [exclusive]\n"
      "functions:\n  - name: t\n    model: resnet152\n    kind: training\n");
  EXPECT_THAT(Error(train), HasSubstr("field 'functions[0].training': required for kind"));
  EXPECT_THAT(Error(train + "    training: {iterations: 10}\n    workload: {kind: poisson, "
                            "rate_rps: 1}\n"),
              HasSubstr("dir/exp.yaml:8: field 'functions[0].workload': not allowed for a "
                        "training function"));
  EXPECT_THAT(Error(train + "    training: {workers: 3, iterations: 10}\n"),
              HasSubstr("dir/exp.yaml:7: field 'functions[0].training': 3 workers on one node"));
  EXPECT_TRUE(Parse(train + "    training: {workers: 3, iterations: 10, same_node: false}\n").ok());
  EXPECT_THAT(Error(WithFunction("    training: {iterations: 10}\n")),
              HasSubstr("dir/exp.yaml:8: field 'functions[0].training': not allowed for an "
                        "inference function"));
  EXPECT_THAT(Error(WithFunction("    kind: llm\n")),
              HasSubstr("dir/exp.yaml:8: field 'functions[0].kind': model 'resnet152' is not an "
                        "LLM"));
  const std::string no_workload = WithFunction("").substr(0, WithFunction("").find("    workload"));
  EXPECT_THAT(Error(no_workload), HasSubstr("field 'functions[0].workload': required field"));
}

TEST_F(LoaderTest, LlmTokensAndDrainTimeout) {
  absl::StatusOr<SimConfig> c = Parse(
      "drain_timeout_s: 30\ncluster: {nodes: 1, gpus_per_node: 1, gpu: A100-40GB}\n"
      "policies: [exclusive]\nfunctions:\n  - name: chat\n    model: llama2-7b\n"
      "    tokens: {prompt: 512, output: 64}\n    workload: {kind: poisson, rate_rps: 1}\n"
      "    slo_ms: 6400\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->drain_timeout, absl::Seconds(30));
  EXPECT_EQ(c->functions[0].kind, core::FunctionKind::kLlmInference);
  EXPECT_EQ(c->functions[0].default_prompt_tokens, 512);
  EXPECT_EQ(c->functions[0].default_output_tokens, 64);
  EXPECT_THAT(Error(WithFunction("    tokens: {prompt: 5}\n")),
              HasSubstr("dir/exp.yaml:8: field 'functions[0].tokens': only for LLM functions"));
  EXPECT_THAT(Error(WithFunction("", "drain_timeout_s: -1\n")),
              HasSubstr("dir/exp.yaml:8: field 'drain_timeout_s': must be >= 0"));
}

TEST_F(LoaderTest, Mm1ValidationNeedsAnMm1Queue) {
  const std::string mm1 = absl::StrCat(
      "report_theory_mm1: true\n"                                        // 1
      "cluster: {nodes: 1, gpus_per_node: 1, gpu: A100-40GB}\n"           // 2
      "policies: [exclusive]\n"                                           // 3
      "functions:\n"                                                      // 4
      "  - name: f\n"                                                     // 5
      "    model: resnet152\n"                                            // 6
      "    service: {exponential_mean_ms: 10}\n"                          // 7
      "    instances: {min: 1, max: 1, initial: 1}\n");                   // 8
  absl::StatusOr<SimConfig> ok = Parse(mm1 + "    workload: {kind: poisson, rate_rps: 50}\n");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_EQ(ok->functions[0].exponential_service_mean, absl::Milliseconds(10));
  EXPECT_TRUE(ok->report_theory_mm1);
  EXPECT_THAT(Error(mm1 + "    workload: {kind: poisson, rate_rps: 100}\n"),
              HasSubstr("dir/exp.yaml:1: field 'report_theory_mm1': function 'f' is unstable"));
  EXPECT_THAT(Error(mm1 + "    workload: {kind: gamma, rate_rps: 10, cv: 2}\n"),
              HasSubstr("function 'f' needs a poisson workload"));
  EXPECT_THAT(Error(mm1 + "    workload: {kind: poisson, rate_rps: 10}\n    batching: "
                          "{max_batch: 4}\n"),
              HasSubstr("dir/exp.yaml:7: field 'functions[0].service': an exponential service "
                        "time needs batching.max_batch: 1"));
}

TEST_F(LoaderTest, RelativeWorkloadPathsResolveAgainstTheExperimentFile) {
  const std::filesystem::path dir = std::filesystem::path(testing::TempDir()) / "exp_rel";
  std::filesystem::create_directories(dir / "data");
  std::ofstream(dir / "data" / "rps.txt") << "1\n2\n3\n";
  const std::string yaml = WithFunction(
      "", "workloads:\n  - name: replay\n    functions: {f: {kind: rps_series, path: "
          "data/rps.txt}}\n  - name: missing\n    functions: {f: {kind: rps_series, path: "
          "data/none.txt}}\n");
  const std::string path = (dir / "e.yaml").string();
  std::ofstream(path) << yaml;
  absl::StatusOr<SimConfig> c = LoadExperiment(path, *perf_);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(),
              HasSubstr(path + ":12: field 'workloads[1].functions.f.path'"));
  std::ofstream(path) << yaml.substr(0, yaml.find("  - name: missing"));
  c = LoadExperiment(path, *perf_);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(std::filesystem::path(c->workloads[0].overrides[0].second.path),
            (dir / "data" / "rps.txt").lexically_normal());
}

TEST_F(LoaderTest, UnreadableFileNamesThePath) {
  absl::StatusOr<SimConfig> c = LoadExperiment("/nonexistent/x.yaml", *perf_);
  ASSERT_FALSE(c.ok());
  EXPECT_TRUE(absl::IsInvalidArgument(c.status()));
  EXPECT_THAT(c.status().message(), HasSubstr("/nonexistent/x.yaml"));
}

}  // namespace
}  // namespace sluice::sim
