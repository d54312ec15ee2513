// The `pipeline:` function entry and the `network:` block (issue 11): the SimConfig they expand
// to (stage functions, PipelineConfig, SLO split, workload on stage 0, variants by pipeline name)
// and each bad-input class with its file:line: field. Line numbers are counted from 1.
#include <string>

#include "absl/strings/str_cat.h"
#include "core/perf/pipeline_profile.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sim/experiment/experiment_loader.h"

namespace sluice::sim {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

class PipelineLoaderTest : public ::testing::Test {
 protected:
  absl::StatusOr<SimConfig> Parse(const std::string& yaml) {
    return ParseExperiment(yaml, "dir/q.yaml", *perf_);
  }
  std::string Error(const std::string& yaml) {
    absl::StatusOr<SimConfig> c = Parse(yaml);
    EXPECT_FALSE(c.ok()) << "parsed:\n" << yaml;
    if (c.ok()) return "";
    EXPECT_TRUE(absl::IsInvalidArgument(c.status())) << c.status();
    return std::string(c.status().message());
  }
  // A valid experiment whose one function is a pipeline with body `pipeline` (line 7) and
  // `extra` lines from line 9, then `tail` at top level.
  static std::string With(const std::string& pipeline, const std::string& extra = "",
                          const std::string& tail = "") {
    return absl::StrCat(
        "experiment: q\n"                                                     // 1
        "cluster: {nodes: 2, gpus_per_node: 4, gpu: A100-40GB, cpu_cores: 64}\n"  // 2
        "policies: [exclusive]\n"                                             // 3
        "functions:\n"                                                        // 4
        "  - name: llama\n"                                                   // 5
        "    workload: {kind: poisson, rate_rps: 2}\n"                        // 6
        "    pipeline: ", pipeline, "\n",                                     // 7
        "    slo_ms: 486\n",                                                  // 8
        extra, tail);
  }
  std::unique_ptr<core::PerfModel> perf_ = core::PerfModel::BuiltIn();
};

TEST_F(PipelineLoaderTest, ExpandsIntoStageFunctionsAndAPipeline) {
  auto c = Parse(With("{model: llama-7b, stages: 8, slo_multipliers: [1, 1.5, 2, 3], "
                      "cpu: {cores_per_worker: 2, max_workers: 3}}",
                      "    instances: {min: 1, max: 6, initial: 1}\n"));
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->functions.size(), 8u);
  ASSERT_EQ(c->pipelines.size(), 1u);
  const PipelineConfig& p = c->pipelines[0];
  EXPECT_EQ(p.name, "llama");
  EXPECT_EQ(p.stages.front(), "llama/s0");
  EXPECT_EQ(p.stages.back(), "llama/s7");
  EXPECT_EQ(p.slo, absl::Milliseconds(486));
  EXPECT_EQ(p.slo_base, absl::Milliseconds(243));  // Table 1
  EXPECT_THAT(p.slo_multipliers, ElementsAre(1, 1.5, 2, 3));
  const auto split = *core::SplitPipeline("llama-7b", 8, "x");
  for (int i = 0; i < 8; ++i) {
    const FunctionConfig& f = c->functions[i];
    SCOPED_TRACE(f.name);
    EXPECT_EQ(f.name, p.stages[i]);
    EXPECT_EQ(f.model, core::StageModelName("llama-7b", i, 8));
    EXPECT_EQ(f.memory, split[i].gpu_memory);
    EXPECT_EQ(f.max_batch, 1);
    EXPECT_EQ(f.quota, core::SmQuota{});  // a whole GPU
    EXPECT_EQ(f.max_instances, 6);
    EXPECT_EQ(f.workload.kind, i == 0 ? WorkloadKind::kPoisson : WorkloadKind::kNone);
    ASSERT_TRUE(f.stage.has_value());
    EXPECT_EQ(f.stage->pipeline, "llama");
    EXPECT_EQ(f.stage->index, i);
    EXPECT_EQ(f.stage->count, 8);
    EXPECT_EQ(f.stage->activation_out, split[i].activation_out);
    // Even split: each stage gets an eighth of the SLO.
    EXPECT_LE(absl::AbsDuration(f.slo - absl::Microseconds(486000 / 8)), absl::Microseconds(1));
    EXPECT_EQ(f.stage->traits.latency_target, f.slo);
    EXPECT_EQ(f.stage->traits.cpu.cores_per_worker, 2);
    EXPECT_EQ(f.stage->traits.cpu.max_workers, 3);
    EXPECT_DOUBLE_EQ(f.stage->traits.cpu.cpu_slowdown, split[i].cpu_slowdown);
  }
}

TEST_F(PipelineLoaderTest, DefaultsAndOverrides) {
  auto c = Parse(absl::StrCat(
      "experiment: q\ncluster: {nodes: 1, gpus_per_node: 8, gpu: A100-80GB}\n"
      "policies: [exclusive]\nfunctions:\n"
      "  - name: w\n    workload: {kind: gamma, rate_rps: 1, cv: 4}\n"
      "    pipeline: {model: WideResNet, stages: 4, cpu: {slowdown: 0}}\n"
      "    batching: {max_batch: 4, max_queue_delay_ms: 2}\n"
      "    quota: {request: 0.5, limit: 1}\n"));
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->functions.size(), 4u);
  EXPECT_EQ(c->pipelines[0].slo, absl::Milliseconds(1.5 * 646));  // default: 1.5x standalone
  EXPECT_THAT(c->pipelines[0].slo_multipliers, ElementsAre(1, 1.5, 2, 2.5, 3));
  EXPECT_EQ(c->functions[0].max_batch, 4);
  EXPECT_DOUBLE_EQ(c->functions[3].quota.request, 0.5);
  EXPECT_EQ(c->functions[3].stage->traits.cpu.cpu_slowdown, 0);
  EXPECT_FALSE(c->network.has_value());
}

TEST_F(PipelineLoaderTest, WorkloadVariantsNameThePipeline) {
  auto c = Parse(With("{model: llama-7b, stages: 8}", "",
                      "workloads:\n  - name: cv8\n    functions:\n"
                      "      llama: {kind: gamma, rate_rps: 2, cv: 8}\n"));
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->workloads.size(), 1u);
  ASSERT_EQ(c->workloads[0].overrides.size(), 1u);
  EXPECT_EQ(c->workloads[0].overrides[0].first, "llama/s0");
  EXPECT_EQ(c->workloads[0].overrides[0].second.cv, 8);
}

TEST_F(PipelineLoaderTest, StageModelsAreRegisteredForTheEngine) {
  auto c = Parse(With("{model: opt-66b, stages: 8}"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(perf_->Find("opt-66b/s0of8").ok());
  ASSERT_TRUE(RegisterPipelineModels(*c, *perf_).ok());
  for (const FunctionConfig& f : c->functions) EXPECT_TRUE(perf_->Find(f.model).ok()) << f.model;
  EXPECT_TRUE(RegisterPipelineModels(*c, *perf_).ok());  // idempotent
}

TEST_F(PipelineLoaderTest, BadPipelinesNameTheFieldAndLine) {
  EXPECT_THAT(Error(With("{model: llama-7b, stages: 6}")),
              HasSubstr("dir/q.yaml:7: field 'functions[0].pipeline.stages': 6 stages do not "
                        "divide llama-7b's 32 layers evenly (allowed: 1, 2, 4, 8, 16, 32)"));
  EXPECT_THAT(Error(With("{model: gpt-5, stages: 8}")),
              HasSubstr("dir/q.yaml:7: field 'functions[0].pipeline.model': unknown pipeline "
                        "model 'gpt-5' (known: bert-21b, llama-7b"));
  EXPECT_THAT(Error(With("{model: llama-7b}")),
              HasSubstr("field 'functions[0].pipeline.stages': a pipeline needs its stages"));
  EXPECT_THAT(Error(With("{model: llama-7b, stages: []}")),
              HasSubstr(":7: field 'functions[0].pipeline.stages': a pipeline needs its stages"));
  EXPECT_THAT(Error(With("{model: llama-7b, stages: 8, stage: 3}")),
              HasSubstr(":7: field 'functions[0].pipeline.stage': unknown field"));
  EXPECT_THAT(Error(With("{model: llama-7b, stages: 8}", "    model: resnet152\n")),
              HasSubstr(":9: field 'functions[0].model': unknown field"));
  EXPECT_THAT(Error(With("{model: llama-7b, stages: 8, slo_multipliers: [1, -2]}")),
              HasSubstr("field 'functions[0].pipeline.slo_multipliers[1]': must be a positive"));
  EXPECT_THAT(Error(With("{model: llama-7b, stages: 8, cpu: {cores: 2}}")),
              HasSubstr("field 'functions[0].pipeline.cpu.cores': unknown field"));
  // OPT-66B in 2 stages is 66 GB a stage: fits no 40 GB GPU.
  EXPECT_THAT(Error(With("{model: opt-66b, stages: 2}")),
              HasSubstr(":7: field 'functions[0].pipeline': a stage of opt-66b in 2 needs"));
  EXPECT_THAT(Error(absl::StrCat(With("{model: llama-7b, stages: 8}"),
                                 "  - name: llama\n    model: resnet152\n"
                                 "    workload: {kind: poisson, rate_rps: 1}\n")),
              HasSubstr(":9: field 'functions[1].name': duplicate function name 'llama'"));
}

TEST_F(PipelineLoaderTest, UnknownPolicyParamIsNamedByTheRegistry) {
  const std::string yaml = absl::StrCat(
      "experiment: q\ncluster: {nodes: 1, gpus_per_node: 8, gpu: A100-80GB}\n"
      "policies:\n  - {name: dilu, bogus_gain: 3}\n"
      "functions:\n  - name: l\n    workload: {kind: poisson, rate_rps: 1}\n"
      "    pipeline: {model: llama-7b, stages: 8}\n");
  EXPECT_THAT(Error(yaml), HasSubstr("bogus_gain"));
}

TEST_F(PipelineLoaderTest, NetworkFromAPresetWithOverrides) {
  auto c = Parse(With("{model: llama-7b, stages: 8}", "",
                      "network: {preset: blitzscale-b, nodes: 2, rdma_gbps: 25}\n"));
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(c->network.has_value());
  EXPECT_EQ(c->network->nodes, 2);
  EXPECT_EQ(c->network->rdma_gbps, 25);
  EXPECT_EQ(c->network->pcie_gpu_gpu_gbps, core::net::NetPreset("blitzscale-b")->pcie_gpu_gpu_gbps);
  EXPECT_THAT(Error(With("{model: llama-7b, stages: 8}", "", "network: {preset: nope}\n")),
              HasSubstr(":9: field 'network.preset': unknown preset (known: "));
  EXPECT_THAT(Error(With("{model: llama-7b, stages: 8}", "", "network: {rdma_gbs: 1}\n")),
              HasSubstr(":9: field 'network.rdma_gbs': "));
  EXPECT_THAT(Error(With("{model: llama-7b, stages: 8}", "", "network: {rdma_gbps: -1}\n")),
              HasSubstr(":9: field 'network': "));
  EXPECT_THAT(Error(With("{model: llama-7b, stages: 8}", "", "network: {nodes: x}\n")),
              HasSubstr(":9: field 'network.nodes': must be a number"));
}

}  // namespace
}  // namespace sluice::sim
