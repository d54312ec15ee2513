// Tests for the function spec parser and writer: a full valid spec mapped field by field, one
// case per bad-input class with its exact message, and parse(ToYaml(spec)) == spec.
#include "runtime/spec/function_spec.h"

#include <cstdio>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace sluice::runtime {
namespace {

using ::testing::HasSubstr;

constexpr char kFull[] = R"(name: bert
kind: inference
command: ["./bert-server", "--port", "${PORT}"]
model: {path: /models/bert, name: bert-base}
slo_ms: 100
memory_gib: 2.5
gpus: 1
batching: {max_batch: 8, max_queue_delay_ms: 10}
autoscaling: {min: 0, max: 4}
quota: {request: 0.3, limit: 0.6}
queue: {max_length: 256, timeout_ms: 5000}
env: {MODE: fast, THREADS: 4}
)";

std::string ErrorOf(const std::string& text) {
  absl::StatusOr<FunctionSpec> spec = ParseFunctionSpec(text, "f.yaml");
  EXPECT_FALSE(spec.ok()) << text;
  if (spec.ok())
    return "";
  EXPECT_EQ(spec.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(spec.status().message());
}

std::string Replace(const std::string& from, const std::string& to) {
  std::string text = kFull;
  EXPECT_NE(text.find(from), std::string::npos) << from;
  return absl::StrReplaceAll(text, {{from, to}});
}

TEST(FunctionSpecTest, FullSpecMapsFieldByField) {
  absl::StatusOr<FunctionSpec> spec = ParseFunctionSpec(kFull, "f.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->name, "bert");
  EXPECT_EQ(spec->kind, FunctionKind::kInference);
  EXPECT_EQ(spec->command, (std::vector<std::string>{"./bert-server", "--port", "${PORT}"}));
  EXPECT_EQ(spec->image, "");
  EXPECT_EQ(spec->model.path, "/models/bert");
  EXPECT_EQ(spec->model.name, "bert-base");
  EXPECT_EQ(spec->slo_ms, 100.0);
  EXPECT_EQ(spec->memory_gib, 2.5);
  EXPECT_EQ(spec->gpus, 1);
  EXPECT_EQ(spec->batching.max_batch, 8);
  EXPECT_EQ(spec->batching.max_queue_delay_ms, 10.0);
  EXPECT_EQ(spec->autoscaling.min, 0);
  EXPECT_EQ(spec->autoscaling.max, 4);
  ASSERT_TRUE(spec->quota.has_value());
  EXPECT_EQ(spec->quota->request, 0.3);
  EXPECT_EQ(spec->quota->limit, 0.6);
  ASSERT_TRUE(spec->queue.has_value());
  EXPECT_EQ(spec->queue->max_length, 256);
  EXPECT_EQ(spec->queue->timeout_ms, 5000.0);
  EXPECT_EQ(spec->env, (std::map<std::string, std::string>{{"MODE", "fast"}, {"THREADS", "4"}}));
  EXPECT_FALSE(spec->training.has_value());
  EXPECT_EQ(spec->quota->time_quota, 1.0);
  EXPECT_EQ(spec->policy, "dilu");
  EXPECT_TRUE(spec->policy_params.empty());
}

TEST(FunctionSpecTest, PolicyParamsAndTimeQuotaMapWithTheirLines) {
  absl::StatusOr<FunctionSpec> spec = ParseFunctionSpec(
      Replace("limit: 0.6}", "limit: 0.6, time_quota: 0.25}") +
          "policy: fast-gs+\npolicy_params:\n  time_quota: 0.5\n  keep_alive_s: 30\n",
      "f.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->quota->time_quota, 0.25);
  EXPECT_EQ(spec->policy, "fast-gs+");
  ASSERT_EQ(spec->policy_params.size(), 2u);
  EXPECT_EQ(spec->policy_params[0].key, "time_quota");
  EXPECT_EQ(spec->policy_params[0].value, "0.5");
  EXPECT_EQ(spec->policy_params[0].line, 15);
  EXPECT_EQ(spec->policy_params[1].key, "keep_alive_s");
  EXPECT_EQ(spec->policy_params[1].line, 16);
  const std::vector<core::PolicyParam> core_params = CorePolicyParams(*spec);
  ASSERT_EQ(core_params.size(), 2u);
  EXPECT_EQ(core_params[1].key, "keep_alive_s");
  EXPECT_EQ(core_params[1].value, "30");
  EXPECT_EQ(core_params[1].line, 16);
}

TEST(FunctionSpecTest, ASpecWithoutPolicyTakesTheGivenDefaultAndRoundTrips) {
  EXPECT_EQ(ParseFunctionSpec(kFull, "f.yaml")->policy, "dilu");  // stored specs: Dilu
  absl::StatusOr<FunctionSpec> s = ParseFunctionSpec(kFull, "f.yaml", "sluice");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->policy, "sluice");
  // Written out, it names its policy, so reading it back (default dilu) keeps sluice.
  EXPECT_EQ(ParseFunctionSpec(FunctionSpecToYaml(*s), "s.yaml")->policy, "sluice");
  // A spec that names its policy keeps it whatever the default.
  EXPECT_EQ(ParseFunctionSpec(std::string(kFull) + "policy: dilu\n", "f.yaml", "sluice")->policy,
            "dilu");
  // Its params are checked against the default: a sluice key without `policy:`.
  const std::string tail = std::string(kFull) + "policy_params: {park_after_s: 5}\n";
  EXPECT_TRUE(ParseFunctionSpec(tail, "f.yaml", "sluice").ok());
  EXPECT_FALSE(ParseFunctionSpec(tail, "f.yaml").ok());
}

TEST(FunctionSpecTest, BadPolicyFieldsNameLineAndField) {
  const std::string unknown = ErrorOf(std::string(kFull) + "policy: hasgpu\n");
  EXPECT_EQ(unknown.rfind("f.yaml:13: field 'policy': unknown policy 'hasgpu' (known: ", 0), 0u)
      << unknown;
  EXPECT_NE(unknown.find("dilu"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("fast-gs+"), std::string::npos) << unknown;
  // The policy's own parser names the param's line and key.
  const std::string bad_key =
      ErrorOf(std::string(kFull) + "policy: fast-gs+\npolicy_params:\n  keep_alive_s: 3\n"
                                   "  windw: 2\n");
  EXPECT_EQ(bad_key.rfind("f.yaml:16: field 'windw': ", 0), 0u) << bad_key;
  const std::string bad_value =
      ErrorOf(std::string(kFull) + "policy: fast-gs+\npolicy_params: {time_quota: 2}\n");
  EXPECT_EQ(bad_value.rfind("f.yaml:14: field 'time_quota': ", 0), 0u) << bad_value;
  // Params of the default policy are checked too.
  EXPECT_EQ(ErrorOf(std::string(kFull) + "policy_params: {alpha: -1}\n").rfind("f.yaml:13: ", 0),
            0u);
  EXPECT_EQ(ErrorOf(std::string(kFull) + "policy_params: [a]\n"),
            "f.yaml:13: field 'policy_params': must be a mapping");
  EXPECT_EQ(ErrorOf(std::string(kFull) + "policy_params: {a: [1]}\n"),
            "f.yaml:13: field 'policy_params.a': must be a string");
  EXPECT_EQ(ErrorOf(std::string(kFull) + "policy_params:\n  a: 1\n  a: 2\n"),
            "f.yaml:15: field 'policy_params.a': duplicate key");
  EXPECT_EQ(ErrorOf(std::string(kFull) + "policy: [dilu]\n"),
            "f.yaml:13: field 'policy': must be a string");
}

TEST(FunctionSpecTest, TimeQuotaOutsideZeroOneIsRejected) {
  for (const char* bad : {"0", "-0.1", "1.5"}) {
    EXPECT_EQ(ErrorOf(Replace("limit: 0.6}", absl::StrCat("limit: 0.6, time_quota: ", bad, "}"))),
              "f.yaml:10: field 'quota.time_quota': must be in (0, 1]")
        << bad;
  }
  EXPECT_EQ(ErrorOf(Replace("limit: 0.6}", "limit: 0.6, time_quota: x}")),
            "f.yaml:10: field 'quota.time_quota': must be a finite number");
}

TEST(FunctionSpecTest, MinimalTrainingSpecTakesDefaults) {
  absl::StatusOr<FunctionSpec> spec = ParseFunctionSpec(
      "name: resnet-train\nkind: training\nimage: sluice/resnet:1\nmodel: {path: /m}\n"
      "memory_gib: 4\ntraining: {workers: 2, iterations: 1000}\n",
      "t.yaml");
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->image, "sluice/resnet:1");
  EXPECT_TRUE(spec->command.empty());
  EXPECT_FALSE(spec->slo_ms.has_value());
  EXPECT_EQ(spec->gpus, 1);
  EXPECT_EQ(spec->batching, BatchingSpec{});
  EXPECT_EQ(spec->autoscaling, AutoscalingSpec{});
  EXPECT_EQ(spec->training, (TrainingSpec{2, 1000}));
}

TEST(FunctionSpecTest, UnknownKeysAtEveryLevel) {
  EXPECT_EQ(ErrorOf(Replace("gpus: 1\n", "gpus: 1\ncolour: red\n")),
            "f.yaml:8: field 'colour': unknown key (allowed: name, kind, command, image, model, "
            "slo_ms, memory_gib, gpus, batching, autoscaling, quota, queue, env, training, llm, "
            "policy, policy_params, pipeline, stage_of)");
  EXPECT_EQ(ErrorOf(Replace("max_batch: 8", "max_bach: 8")),
            "f.yaml:8: field 'batching.max_bach': unknown key (allowed: max_batch, "
            "max_queue_delay_ms)");
  EXPECT_EQ(ErrorOf(Replace("gpus: 1\n", "gpus: 1\ngpus: 2\n")),
            "f.yaml:8: field 'gpus': duplicate key");
}

TEST(FunctionSpecTest, WrongTypes) {
  EXPECT_EQ(ErrorOf(Replace("gpus: 1", "gpus: one")), "f.yaml:7: field 'gpus': must be an integer");
  EXPECT_EQ(ErrorOf(Replace("max_batch: 8", "max_batch: 8.5")),
            "f.yaml:8: field 'batching.max_batch': must be an integer");
  EXPECT_EQ(ErrorOf(Replace("slo_ms: 100", "slo_ms: [100]")),
            "f.yaml:5: field 'slo_ms': must be a finite number");
  EXPECT_EQ(ErrorOf(Replace("slo_ms: 100", "slo_ms: .inf")),
            "f.yaml:5: field 'slo_ms': must be a finite number");
  EXPECT_EQ(ErrorOf(Replace("\"--port\"", "{a: 1}")),
            "f.yaml:3: field 'command[1]': must be a string");
  EXPECT_EQ(ErrorOf(Replace("model: {path: /models/bert, name: bert-base}", "model: /m")),
            "f.yaml:4: field 'model': must be a mapping");
  EXPECT_EQ(ErrorOf("- a\n- b\n"), "f.yaml:1: field '<document>': must be a mapping");
}

TEST(FunctionSpecTest, MissingRequiredFields) {
  EXPECT_EQ(ErrorOf(Replace("name: bert\n", "")), "f.yaml:1: field 'name': is required");
  EXPECT_EQ(ErrorOf(Replace("slo_ms: 100\n", "")),
            "f.yaml:1: field 'slo_ms': is required for kind inference");
  EXPECT_EQ(ErrorOf(Replace("path: /models/bert, ", "")),
            "f.yaml:4: field 'model.path': is required");
  EXPECT_EQ(ErrorOf(Replace("command: [\"./bert-server\", \"--port\", \"${PORT}\"]\n", "")),
            "f.yaml:1: field 'command': exactly one of 'command' and 'image' must be set");
  EXPECT_EQ(ErrorOf(Replace("kind: inference\n", "kind: training\n")),
            "f.yaml:1: field 'training': is required for kind training");
  EXPECT_EQ(ErrorOf(""), "f.yaml:1: empty function spec");
}

TEST(FunctionSpecTest, ImpossibleValues) {
  EXPECT_EQ(ErrorOf(Replace("name: bert", "name: Bert_1")),
            "f.yaml:1: field 'name': must be 1-63 chars of [a-z0-9-], starting and ending "
            "alphanumeric");
  EXPECT_EQ(ErrorOf(Replace("name: bert", "name: " + std::string(64, 'a'))),
            "f.yaml:1: field 'name': must be 1-63 chars of [a-z0-9-], starting and ending "
            "alphanumeric");
  EXPECT_EQ(ErrorOf(Replace("kind: inference", "kind: batch")),
            "f.yaml:2: field 'kind': must be one of inference, training, llm");
  EXPECT_EQ(ErrorOf(Replace("slo_ms: 100", "slo_ms: 0")), "f.yaml:5: field 'slo_ms': must be > 0");
  EXPECT_EQ(ErrorOf(Replace("memory_gib: 2.5", "memory_gib: -1")),
            "f.yaml:6: field 'memory_gib': must be > 0");
  EXPECT_EQ(ErrorOf(Replace("gpus: 1", "gpus: 0")),
            "f.yaml:7: field 'gpus': must be in [1, 2147483647], got 0");
  EXPECT_EQ(ErrorOf(Replace("{min: 0, max: 4}", "{min: 5, max: 4}")),
            "f.yaml:9: field 'autoscaling.min': must be <= autoscaling.max");
  EXPECT_EQ(ErrorOf(Replace("request: 0.3", "request: 0.7")),
            "f.yaml:10: field 'quota.request': must be <= quota.limit");
  EXPECT_EQ(ErrorOf(Replace("limit: 0.6", "limit: 1.5")),
            "f.yaml:10: field 'quota.limit': must be <= 1");
  EXPECT_EQ(ErrorOf(Replace("timeout_ms: 5000", "timeout_ms: 0")),
            "f.yaml:11: field 'queue.timeout_ms': must be > 0");
  EXPECT_EQ(ErrorOf(Replace("MODE: fast", "1MODE: fast")),
            "f.yaml:12: field 'env.1MODE': must match [A-Za-z_][A-Za-z0-9_]*");
  EXPECT_EQ(ErrorOf(Replace("command:", "image: x\ncommand:")),
            "f.yaml:4: field 'command': exactly one of 'command' and 'image' must be set");
}

TEST(FunctionSpecTest, TrainingBlockOnNonTrainingKind) {
  EXPECT_EQ(ErrorOf(std::string(kFull) + "training: {workers: 2, iterations: 10}\n"),
            "f.yaml:13: field 'training': only allowed for kind training, not inference");
}

TEST(FunctionSpecTest, LlmBlockIsStrict) {
  const std::string llm = Replace("kind: inference", "kind: llm");
  auto with = [&llm](const std::string& block) {
    return ParseFunctionSpec(llm + block, "f.yaml");
  };
  absl::StatusOr<FunctionSpec> pd = with("llm: {disaggregated: true, prefill: 2, decode: 4}\n");
  ASSERT_TRUE(pd.ok()) << pd.status();
  EXPECT_EQ(pd->llm, (LlmSpec{true, 2, 4}));
  absl::StatusOr<FunctionSpec> mono = with("llm: {disaggregated: false}\n");
  ASSERT_TRUE(mono.ok()) << mono.status();
  EXPECT_EQ(mono->llm, LlmSpec{});
  auto error = [&with](const std::string& block) {
    auto s = with(block);
    return s.ok() ? std::string("ok") : std::string(s.status().message());
  };
  EXPECT_THAT(error("llm: {disaggregated: true, prefill: 2}\n"),
              HasSubstr("field 'llm.decode': is required with disaggregated: true"));
  EXPECT_THAT(error("llm: {disaggregated: true, prefill: 0, decode: 1}\n"),
              HasSubstr("field 'llm.prefill'"));
  EXPECT_THAT(error("llm: {prefill: 1}\n"),
              HasSubstr("field 'llm.prefill': only allowed with disaggregated: true"));
  EXPECT_THAT(error("llm: {disaggregated: yes}\n"),
              HasSubstr("field 'llm.disaggregated': must be true or false"));
  EXPECT_THAT(error("llm: {roles: 2}\n"), HasSubstr("llm"));
  EXPECT_THAT(ErrorOf(std::string(kFull) + "llm: {disaggregated: false}\n"),
              HasSubstr("field 'llm': only allowed for kind llm, not inference"));
  EXPECT_THAT(error("llm: {disaggregated: true, prefill: 1, decode: 1}\n"),
              ::testing::Eq("ok"));
  EXPECT_THAT(ErrorOf(llm + "llm:\n  disaggregated: true\n  prefill: x\n  decode: 1\n"),
              ::testing::StartsWith("f.yaml:"));
}

TEST(FunctionSpecTest, YamlSyntaxErrorsCarryTheirLine) {
  const std::string message = ErrorOf(Replace("gpus: 1\n", "gpus: [1\n"));
  EXPECT_EQ(message.rfind("f.yaml:", 0), 0u) << message;
  EXPECT_NE(message.find("invalid YAML: "), std::string::npos) << message;
  EXPECT_EQ(ErrorOf("name: a\n  bad: : :\n").rfind("f.yaml:2: invalid YAML: ", 0), 0u);
}

TEST(FunctionSpecTest, ToYamlRoundTrips) {
  absl::StatusOr<FunctionSpec> full = ParseFunctionSpec(kFull, "f.yaml");
  ASSERT_TRUE(full.ok()) << full.status();
  FunctionSpec odd = *full;
  odd.name = "odd-1";
  odd.kind = FunctionKind::kTraining;
  odd.command = {"sh", "-c", "echo \"hi\": #x", "", "yes", "null", "1e3"};
  odd.model = {"/m path/with: colon", ""};
  odd.slo_ms.reset();
  odd.memory_gib = 0.1 + 0.2;
  odd.batching.max_queue_delay_ms = 1.0 / 3.0;
  odd.quota.reset();
  odd.env = {{"EMPTY", ""}, {"NUM", "007"}, {"B", "true"}};
  odd.training = TrainingSpec{3, 5000000000};
  FunctionSpec image = *full;
  image.command.clear();
  image.image = "registry.local/bert:2";
  image.queue.reset();
  image.env.clear();
  FunctionSpec policy = *full;
  policy.quota->time_quota = 0.3;
  policy.policy = "fast-gs+";
  policy.policy_params = {{"time_quota", "0.5", 0}, {"keep_alive_s", "1e1", 0}};
  FunctionSpec default_with_params = *full;
  default_with_params.policy_params = {{"alpha", "2", 0}};
  FunctionSpec llm = *full;
  llm.kind = FunctionKind::kLlm;
  llm.llm = LlmSpec{true, 2, 3};
  FunctionSpec llm_mono = llm;
  llm_mono.llm = LlmSpec{};
  for (const FunctionSpec& spec :
       {*full, odd, image, policy, default_with_params, llm, llm_mono}) {
    const std::string yaml = FunctionSpecToYaml(spec);
    absl::StatusOr<FunctionSpec> back = ParseFunctionSpec(yaml, "rt.yaml");
    ASSERT_TRUE(back.ok()) << back.status() << "\n" << yaml;
    EXPECT_EQ(*back, spec) << yaml;
  }
}

TEST(FunctionSpecTest, LoadReadsFileAndNamesIt) {
  const std::string path = ::testing::TempDir() + "/spec_test_bert.yaml";
  {
    std::ofstream out(path);
    out << Replace("gpus: 1", "gpus: 0");
  }
  absl::StatusOr<FunctionSpec> spec = LoadFunctionSpec(path);
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.status().message(), path + ":7: field 'gpus': must be in [1, 2147483647], got 0");
  std::remove(path.c_str());
  EXPECT_EQ(LoadFunctionSpec(path).status().code(), absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace sluice::runtime
