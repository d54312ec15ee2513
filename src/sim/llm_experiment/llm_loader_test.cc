// The llm_serving loader: the schema mapped onto LlmSimConfig, BlitzScale's SLO defaults, the
// Azure LLM trace columns, and every bad-input class with its file:line: field. Fixtures are
// strings (line numbers count from 1); workload files live in a per-test temporary directory.
#include "sim/llm_experiment/llm_loader.h"

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "sim/llm_experiment/llm_loader_internal.h"

namespace sluice::sim::llm {
namespace {

using ::testing::HasSubstr;

// Lines: 1 kind, 2 duration_s, 3 cluster, 4 functions, 5 name, 6 model, 7 workload, 8 policies.
constexpr char kBase[] =
    "kind: llm_serving\n"
    "duration_s: 60\n"
    "cluster: {preset: blitzscale-b, nodes: 2}\n"
    "functions:\n"
    "  - name: code\n"
    "    model: llama2-7b\n"
    "    workload: {kind: poisson, rate_rps: 2}\n"
    "policies: [serverless-llm, blitzscale]\n";

class LlmLoaderTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::path(::testing::TempDir()) /
           absl::StrCat("llm_loader_", ::testing::UnitTest::GetInstance()->random_seed(), "_",
                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    std::ofstream(dir_ / "trace.csv") << "TIMESTAMP,ContextTokens,GeneratedTokens\n"
                                         "2023-11-16 18:17:03.9799600,4808,10\n"
                                         "2023-11-16 18:17:04.0319600,3180,8\n";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string path() const { return (dir_ / "exp.yaml").string(); }
  absl::StatusOr<LlmSimConfig> Parse(const std::string& yaml) {
    return ParseLlmExperiment(yaml, path());
  }
  // kBase with `from` replaced by `to` (which must occur).
  static std::string Edit(const std::string& from, const std::string& to) {
    const std::string base = kBase;
    EXPECT_NE(base.find(from), std::string::npos) << from;
    return absl::StrReplaceAll(base, {{from, to}});
  }
  // The message of a parse that must fail with InvalidArgument.
  std::string Error(const std::string& yaml) {
    absl::StatusOr<LlmSimConfig> c = Parse(yaml);
    EXPECT_FALSE(c.ok()) << "parsed:\n" << yaml;
    if (c.ok())
      return "";
    EXPECT_TRUE(absl::IsInvalidArgument(c.status())) << c.status();
    return std::string(c.status().message());
  }
  std::string At(int line, const std::string& field) const {
    return absl::StrCat(path(), ":", line, ": field '", field, "'");
  }

  std::filesystem::path dir_;
};

TEST_F(LlmLoaderTest, MapsTheSchemaOntoTheConfig) {
  absl::StatusOr<LlmSimConfig> c = Parse(R"(experiment: azure
kind: llm_serving
seed: 9
duration_s: 120
sample_interval_s: 0.5
drain_timeout_s: 10
instance_start_s: 0.3
gpu: a100
cluster: {preset: blitzscale-a, nodes: 2, rdma_gbps: 200, gpu_memory_gib: 40}
functions:
  - name: big
    model: llama2-70b
    disaggregated: false
    initial_prefill: 2
    max_batch_tokens: 2048
    max_decode_batch: 64
    default_prompt_tokens: 100
    default_output_tokens: 20
    workload: {kind: request_trace, path: trace.csv, timestamp_column: TIMESTAMP,
               prompt_tokens_column: ContextTokens, output_tokens_column: GeneratedTokens,
               scale: 2, start_offset_s: 1}
  - name: small
    model: llama2-7b
    tp: 1
    ttft_slo_ms: 500
    initial_prefill: 3
    initial_decode: 2
    workload: {kind: poisson, rate_rps: 1}
bursts:
  - {function: small, at_s: 30, factor: 5, ramp_s: 2, hold_s: 10}
policies:
  - serverless-llm
  - {name: blitzscale, label: blitz-2s}
)");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->name, "azure");
  EXPECT_EQ(c->seed, 9u);
  EXPECT_EQ(c->duration, absl::Seconds(120));
  EXPECT_EQ(c->sample_interval, absl::Milliseconds(500));
  EXPECT_EQ(c->drain_timeout, absl::Seconds(10));
  EXPECT_EQ(c->instance_start, absl::Milliseconds(300));
  EXPECT_EQ(c->cluster.nodes, 2);
  EXPECT_EQ(c->cluster.rdma_gbps, 200);
  EXPECT_EQ(c->cluster.gpu_memory.gib(), 40);
  ASSERT_EQ(c->functions.size(), 2u);
  const LlmFunctionConfig& big = c->functions[0];
  EXPECT_EQ(big.tp, 4);  // the model's default
  EXPECT_FALSE(big.disaggregated);
  EXPECT_EQ(big.initial_prefill, 2);
  EXPECT_EQ(big.initial_decode, 0);
  EXPECT_EQ(big.ttft_slo, absl::Milliseconds(1250));
  EXPECT_EQ(big.tbt_slo, absl::Milliseconds(200));
  EXPECT_EQ(big.max_batch_tokens, 2048);
  EXPECT_EQ(big.max_decode_batch, 64);
  EXPECT_EQ(big.default_prompt_tokens, 100);
  EXPECT_EQ(big.default_output_tokens, 20);
  EXPECT_EQ(big.workload.kind, WorkloadKind::kRequestTrace);
  EXPECT_EQ(big.workload.prompt_tokens_column, "ContextTokens");
  EXPECT_EQ(big.workload.output_tokens_column, "GeneratedTokens");
  EXPECT_EQ(big.workload.scale, 2);
  EXPECT_EQ(big.workload.start_offset, absl::Seconds(1));
  EXPECT_EQ(big.workload.path, (dir_ / "trace.csv").string());
  const LlmFunctionConfig& small = c->functions[1];
  EXPECT_TRUE(small.disaggregated);
  EXPECT_EQ(small.ttft_slo, absl::Milliseconds(500));
  EXPECT_EQ(small.tbt_slo, absl::Milliseconds(150));
  EXPECT_EQ(small.initial_prefill, 3);
  EXPECT_EQ(small.initial_decode, 2);
  ASSERT_EQ(c->bursts.size(), 1u);
  EXPECT_EQ(c->bursts[0].function, "small");
  EXPECT_EQ(c->bursts[0].at, absl::Seconds(30));
  EXPECT_EQ(c->bursts[0].factor, 5);
  EXPECT_EQ(c->bursts[0].ramp, absl::Seconds(2));
  EXPECT_EQ(c->bursts[0].hold, absl::Seconds(10));
  ASSERT_EQ(c->policies.size(), 2u);
  EXPECT_EQ(c->policies[0].label, "serverless-llm");
  EXPECT_EQ(c->policies[1].label, "blitz-2s");
  EXPECT_EQ(c->policies[1].set.name, "blitzscale");
  EXPECT_EQ(c->source_file, path());
}

TEST_F(LlmLoaderTest, DefaultsNameTheFileAndUseBlitzScaleSlos) {
  absl::StatusOr<LlmSimConfig> c = Parse(kBase);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->name, "exp");
  EXPECT_EQ(c->gpu, "a100");
  EXPECT_EQ(c->functions[0].tp, 1);
  EXPECT_EQ(c->functions[0].ttft_slo, absl::Milliseconds(450));
  EXPECT_EQ(c->functions[0].tbt_slo, absl::Milliseconds(150));
  EXPECT_EQ(internal::DefaultSlos("llama3-8b").ttft_ms, 450);
  EXPECT_EQ(internal::DefaultSlos("llama2-70b").tbt_ms, 200);
}

TEST_F(LlmLoaderTest, TopLevelErrorsNameLineAndField) {
  EXPECT_THAT(Error(Edit("duration_s: 60\n", "duration_s: 60\nhorizon_s: 3\n")),
              HasSubstr(At(3, "horizon_s")));
  EXPECT_THAT(Error(Edit("kind: llm_serving", "kind: simulation")), HasSubstr(At(1, "kind")));
  EXPECT_THAT(Error(Edit("kind: llm_serving\n", "")), HasSubstr("field 'kind'"));
  EXPECT_THAT(Error(Edit("duration_s: 60", "duration_s: -1")), HasSubstr(At(2, "duration_s")));
  EXPECT_THAT(Error(Edit("duration_s: 60", "duration_s: abc")), HasSubstr(At(2, "duration_s")));
  EXPECT_THAT(Error(Edit("duration_s: 60", "duration_s: 60\nsample_interval_s: 61")),
              HasSubstr(At(3, "sample_interval_s")));
  EXPECT_THAT(Error(Edit("duration_s: 60", "duration_s: 60\nseed: -2")), HasSubstr(At(3, "seed")));
  EXPECT_THAT(Error(Edit("duration_s: 60", "duration_s: 60\ngpu: tpu9")), HasSubstr(At(3, "gpu")));
  EXPECT_THAT(Error(Edit("duration_s: 60", "duration_s: [1")), HasSubstr("malformed YAML"));
}

TEST_F(LlmLoaderTest, ClusterErrorsNameLineAndField) {
  EXPECT_THAT(Error(Edit("preset: blitzscale-b", "preset: cluster-z")),
              HasSubstr(At(3, "cluster.preset")));
  EXPECT_THAT(Error(Edit("nodes: 2", "nodes: 0")), HasSubstr(At(3, "cluster.nodes")));
  EXPECT_THAT(Error(Edit("nodes: 2", "nodes: 2, nics: 1")), HasSubstr(At(3, "cluster.nics")));
  EXPECT_THAT(Error(Edit("nodes: 2", "nodes: 2, rdma_gbps: -5")),
              HasSubstr(At(3, "cluster.rdma_gbps")));
  EXPECT_THAT(Error(Edit("nodes: 2", "nodes: 2, gpus_per_nic: 9")),
              HasSubstr(At(3, "cluster.gpus_per_nic")));
  EXPECT_THAT(Error(Edit("cluster: {preset: blitzscale-b, nodes: 2}\n", "")),
              HasSubstr("field 'cluster'"));
}

TEST_F(LlmLoaderTest, FunctionErrorsNameLineAndField) {
  EXPECT_THAT(Error(Edit("model: llama2-7b", "model: gpt-9")),
              HasSubstr(At(6, "functions[0].model")));
  EXPECT_THAT(Error(Edit("model: llama2-7b", "model: llama2-7b\n    colour: red")),
              HasSubstr(At(7, "functions[0].colour")));
  EXPECT_THAT(Error(Edit("model: llama2-7b", "model: llama2-7b\n    tp: 16")),
              HasSubstr(At(7, "functions[0].tp")));
  EXPECT_THAT(Error(Edit("model: llama2-7b", "model: llama2-7b\n    ttft_slo_ms: 0")),
              HasSubstr(At(7, "functions[0].ttft_slo_ms")));
  EXPECT_THAT(Error(Edit("model: llama2-7b", "model: llama2-7b\n    initial_prefill: 40")),
              HasSubstr(At(7, "functions[0].initial_prefill")));
  EXPECT_THAT(Error(Edit("model: llama2-7b",
                         "model: llama2-7b\n    disaggregated: false\n    initial_decode: 1")),
              HasSubstr(At(8, "functions[0].initial_decode")));
  EXPECT_THAT(Error(Edit("model: llama2-7b", "model: llama2-7b\n    max_batch_tokens: 0")),
              HasSubstr(At(7, "functions[0].max_batch_tokens")));
  EXPECT_THAT(Error(Edit("model: llama2-7b", "model: llama2-7b\n    disaggregated: maybe")),
              HasSubstr(At(7, "functions[0].disaggregated")));
  EXPECT_THAT(Error(Edit("  - name: code\n", "  - name: code\n    model: llama2-7b\n")),
              HasSubstr("duplicate"));
  // Several functions may serve one model (they share its parameter copies), at one tp.
  absl::StatusOr<LlmSimConfig> two = Parse(Edit("policies:",
                                                "  - name: other\n    model: llama2-7b\n"
                                                "    workload: {kind: poisson, rate_rps: 2}\n"
                                                "policies:"));
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_EQ(two->functions.size(), 2u);
  EXPECT_THAT(Error(Edit("policies:",
                         "  - name: other\n    model: llama2-7b\n    tp: 2\n"
                         "    workload: {kind: poisson, rate_rps: 2}\npolicies:")),
              HasSubstr(At(8, "functions[1].tp")));
  EXPECT_THAT(Error(Edit("- name: code", "- name: 'a b'")), HasSubstr(At(5, "functions[0].name")));
  EXPECT_THAT(Error("kind: llm_serving\ncluster: {preset: blitzscale-b}\nfunctions: []\n"
                    "policies: [blitzscale]\n"),
              HasSubstr(At(3, "functions")));
}

TEST_F(LlmLoaderTest, WorkloadErrorsCarryTheFullFieldPath) {
  EXPECT_THAT(Error(Edit("rate_rps: 2", "rate_rps: -2")),
              HasSubstr(At(7, "functions[0].workload.rate_rps")));
  EXPECT_THAT(Error(Edit("{kind: poisson, rate_rps: 2}", "{kind: none}")),
              HasSubstr(At(7, "functions[0].workload")));
  EXPECT_THAT(
      Error(Edit("{kind: poisson, rate_rps: 2}", "{kind: request_trace, path: missing.csv}")),
      HasSubstr("functions[0].workload.path"));
  EXPECT_THAT(Error(Edit("    workload: {kind: poisson, rate_rps: 2}\n", "")),
              HasSubstr(At(5, "functions[0].workload")));
}

TEST_F(LlmLoaderTest, PolicyAndBurstErrorsNameLineAndField) {
  EXPECT_THAT(Error(Edit("[serverless-llm, blitzscale]", "[serverless-llm, blitz]")),
              HasSubstr(At(8, "policies[1].name")));
  EXPECT_THAT(Error(Edit("[serverless-llm, blitzscale]", "[blitzscale, blitzscale]")),
              HasSubstr("duplicate policy label"));
  EXPECT_THAT(Error(Edit("[serverless-llm, blitzscale]", "[{name: blitzscale, bogus_knob: 3}]")),
              HasSubstr("bogus_knob"));
  EXPECT_THAT(Error(Edit("[serverless-llm, blitzscale]", "[{label: x}]")),
              HasSubstr(At(8, "policies[0].name")));
  EXPECT_THAT(Error(Edit("[serverless-llm, blitzscale]", "[]")), HasSubstr(At(8, "policies")));
  const std::string burst = "policies: [blitzscale]\nbursts:\n  - ";
  EXPECT_THAT(Error(Edit("policies: [serverless-llm, blitzscale]\n",
                         burst + "{function: chat, at_s: 1}\n")),
              HasSubstr(At(10, "bursts[0].function")));
  EXPECT_THAT(Error(Edit("policies: [serverless-llm, blitzscale]\n",
                         burst + "{function: code, at_s: 60}\n")),
              HasSubstr(At(10, "bursts[0].at_s")));
  EXPECT_THAT(Error(Edit("policies: [serverless-llm, blitzscale]\n",
                         burst + "{function: code, at_s: 1, factor: 0}\n")),
              HasSubstr(At(10, "bursts[0].factor")));
  EXPECT_THAT(Error(Edit("policies: [serverless-llm, blitzscale]\n",
                         burst + "{function: code, at_s: 1, when: 3}\n")),
              HasSubstr(At(10, "bursts[0].when")));
}

TEST_F(LlmLoaderTest, FailuresAreParsedAndBadOnesNameTheField) {
  const std::string fail = "policies: [blitzscale]\nfailures:\n  - ";
  absl::StatusOr<LlmSimConfig> c =
      Parse(Edit("policies: [serverless-llm, blitzscale]\n",
                 fail + "{at_s: 12.5, node: 1, gpu: 3}\n  - {at_s: 20, node: 0}\n"));
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->failures.size(), 2u);
  EXPECT_EQ(c->failures[0].at, absl::Seconds(12.5));
  EXPECT_EQ(c->failures[0].node, 1);
  EXPECT_EQ(c->failures[0].gpu, 3);
  EXPECT_EQ(c->failures[1].gpu, -1);  // the whole node
  auto bad = [&](const std::string& item) {
    return Error(Edit("policies: [serverless-llm, blitzscale]\n", fail + item + "\n"));
  };
  EXPECT_THAT(bad("{at_s: 1, node: 2}"), HasSubstr(At(10, "failures[0].node")));
  EXPECT_THAT(bad("{at_s: 1, node: 0, gpu: 8}"), HasSubstr(At(10, "failures[0].gpu")));
  EXPECT_THAT(bad("{at_s: 1, node: 0, gpu: -2}"), HasSubstr(At(10, "failures[0].gpu")));
  EXPECT_THAT(bad("{at_s: 60, node: 0}"), HasSubstr(At(10, "failures[0].at_s")));
  EXPECT_THAT(bad("{node: 0}"), HasSubstr(At(10, "failures[0].at_s")));
  EXPECT_THAT(bad("{at_s: 1, node: 0, instance: 3}"), HasSubstr(At(10, "failures[0].instance")));
  EXPECT_THAT(Error(Edit("policies: [serverless-llm, blitzscale]\n",
                         "policies: [blitzscale]\nfailures: {at_s: 1}\n")),
              HasSubstr(At(9, "failures")));
}

TEST_F(LlmLoaderTest, SelectsPoliciesByLabelOrName) {
  absl::StatusOr<LlmSimConfig> c = Parse(kBase);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_TRUE(SelectLlmPolicies({"blitzscale"}, *c).ok());
  ASSERT_EQ(c->policies.size(), 1u);
  EXPECT_EQ(c->policies[0].label, "blitzscale");
  const absl::Status s = SelectLlmPolicies({"allcache"}, *c);
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_THAT(s.message(), HasSubstr("allcache"));
}

TEST_F(LlmLoaderTest, LoadNamesAnUnreadableFile) {
  absl::StatusOr<LlmSimConfig> c = LoadLlmExperiment((dir_ / "nope.yaml").string());
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("nope.yaml"));
  c = LoadLlmExperiment(dir_.string());
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("directory"));
}

}  // namespace
}  // namespace sluice::sim::llm
