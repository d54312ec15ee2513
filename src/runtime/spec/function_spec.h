// The declarative per-function spec a user deploys (one YAML file per function), its strict
// parser and its YAML writer. Used by the controller (registry, persistence), the CLI (`sluice
// deploy FILE`) and the gateway/agent (batching, queue, command). Schema: README.md here.
// Thread-safe: pure functions over values; LoadFunctionSpec reads one file.
#ifndef SLUICE_RUNTIME_SPEC_FUNCTION_SPEC_H_
#define SLUICE_RUNTIME_SPEC_FUNCTION_SPEC_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

#include "core/policy/policy_params.h"

namespace sluice::runtime {

enum class FunctionKind { kInference, kTraining, kLlm };

// "inference", "training" or "llm" (the YAML spelling).
const char* FunctionKindName(FunctionKind kind);

struct ModelSpec {
  std::string path;  // Required, non-empty.
  std::string name;  // Optional perf-model key; empty when absent.
  bool operator==(const ModelSpec&) const = default;
};

struct BatchingSpec {
  int max_batch = 1;                // >= 1.
  double max_queue_delay_ms = 0.0;  // >= 0.
  bool operator==(const BatchingSpec&) const = default;
};

struct AutoscalingSpec {
  int min = 0;  // 0 <= min <= max.
  int max = 1;  // >= 1.
  bool operator==(const AutoscalingSpec&) const = default;
};

// Pre-set <request, limit> SM quota fractions and HAS-GPU's time quota; absent means "profile
// it".
struct QuotaSpec {
  double request = 0.0;     // 0 < request <= limit.
  double limit = 0.0;       // limit <= 1.
  double time_quota = 1.0;  // in (0, 1]; 1 = no time slicing (optional in YAML).
  bool operator==(const QuotaSpec&) const = default;
};

// One `key: value` of `policy_params`, kept with its YAML line so the policy's own parser can
// name the line of a bad key or value. Equality ignores the line (where it was read is not part
// of the value), so a spec equals its round trip through YAML.
struct PolicyParamSpec {
  std::string key;
  std::string value;
  int line = 0;
  bool operator==(const PolicyParamSpec& o) const { return key == o.key && value == o.value; }
};

// The policy of a parsed spec that names none, unless the parser is given another default (the
// controller's --default-policy, `sluice` by default, applies to specs being deployed); also the
// policy FunctionSpecToYaml leaves unwritten, so a stored spec without `policy:` stays Dilu.
inline constexpr char kDefaultPolicy[] = "dilu";

// Bounded per-function queue and per-request deadline.
struct QueueSpec {
  int max_length = 0;       // >= 1.
  double timeout_ms = 0.0;  // > 0.
  bool operator==(const QueueSpec&) const = default;
};

struct TrainingSpec {
  int workers = 0;         // >= 1.
  int64_t iterations = 0;  // >= 1.
  bool operator==(const TrainingSpec&) const = default;
};

// LLM serving layout (kind llm only; absent = every instance does prefill and decode). With
// `disaggregated`, the controller starts `prefill` instances with --role prefill and `decode`
// with --role decode and publishes the roles in the routes (P/D disaggregation, BlitzScale §5).
struct LlmSpec {
  bool disaggregated = false;
  int prefill = 0;  // >= 1 iff disaggregated, else 0 (absent).
  int decode = 0;   // >= 1 iff disaggregated, else 0 (absent).
  bool operator==(const LlmSpec&) const = default;
};

// One stage of a pipeline in the list form of `pipeline.stages`. Unset fields take the
// pipeline's (the top-level spec's) values when the pipeline is expanded (ExpandPipeline).
struct PipelineStageSpec {
  std::string name;                  // DNS label, unique in the pipeline.
  std::vector<std::string> command;  // At most one of command/image; both empty: the pipeline's.
  std::string image;
  std::optional<double> memory_gib;  // > 0.
  std::optional<double> slo_ms;      // > 0; default: the pipeline's slo_ms / stage count.
  std::optional<BatchingSpec> batching;
  std::optional<AutoscalingSpec> autoscaling;
  std::optional<QuotaSpec> quota;
  std::map<std::string, std::string> env;  // Added to (and overriding) the pipeline's env.
  bool operator==(const PipelineStageSpec&) const = default;
};

// `pipeline: {stages: N}` (N copies of the top-level command/image, each told its index) or
// `pipeline: {stages: [{name, ...}, ...]}` (named stages, in order). Kind inference only.
struct PipelineSpec {
  int count = 0;                          // The `stages: N` form (then `stages` is empty).
  std::vector<PipelineStageSpec> stages;  // The list form (then count == stages.size()).
  bool operator==(const PipelineSpec&) const = default;
};

// Set on the stage functions ExpandPipeline makes (written by the controller; a user spec may
// carry it but normally does not): which pipeline the function is stage `index` of.
struct StageOfSpec {
  std::string pipeline;          // The pipeline's name (a DNS label).
  int index = 0;                 // 0 <= index < count.
  int count = 1;                 // >= 1.
  double pipeline_slo_ms = 0.0;  // The end-to-end SLO, > 0.
  bool operator==(const StageOfSpec&) const = default;
};

// A validated spec: every invariant documented on the fields holds for values returned by
// ParseFunctionSpec. Exactly one of `command` (non-empty) and `image` (non-empty) is set, except
// in a pipeline whose listed stages all name their own (then both may be empty).
struct FunctionSpec {
  std::string name;  // DNS label: [a-z0-9-], 1-63 chars, starts and ends alphanumeric.
  FunctionKind kind = FunctionKind::kInference;
  std::vector<std::string> command;  // argv; "${PORT}" etc. are expanded by the agent.
  std::string image;
  ModelSpec model;
  std::optional<double> slo_ms;  // Required (> 0) for inference/llm; optional for training.
  double memory_gib = 0.0;       // GPU memory per GPU, > 0.
  int gpus = 1;                  // >= 1.
  BatchingSpec batching;
  AutoscalingSpec autoscaling;
  std::optional<QuotaSpec> quota;
  std::optional<QueueSpec> queue;
  std::map<std::string, std::string> env;  // Keys match [A-Za-z_][A-Za-z0-9_]*.
  std::optional<TrainingSpec> training;    // Present iff kind == kTraining.
  std::optional<LlmSpec> llm;              // Only for kind == kLlm.
  std::optional<PipelineSpec> pipeline;    // Only for kind == kInference; never with stage_of.
  std::optional<StageOfSpec> stage_of;     // Only for kind == kInference.
  // A core::KnownPolicies() name and its params (in file order, keys unique); validated by
  // building the set with core::MakePolicySet.
  std::string policy = kDefaultPolicy;
  std::vector<PolicyParamSpec> policy_params;
  bool operator==(const FunctionSpec&) const = default;
};

// Parses and validates one spec from YAML `text`; `file` names it in errors. Every error is
// InvalidArgument "file:line: field 'a.b': message" (common::InputError): unknown or duplicate
// keys at any level, wrong types, missing required fields, impossible values, a training block
// on a non-training kind, an unknown policy (listing the known ones), a policy param the policy
// rejects (the policy's message, at the param's line), and YAML syntax errors (with their line,
// no field).
// `default_policy` is the policy of a spec that names none (its params are checked against it):
// the controller passes its ControllerOptions::default_policy for a spec being deployed; stored
// specs are read with kDefaultPolicy, the one FunctionSpecToYaml leaves unwritten.
absl::StatusOr<FunctionSpec> ParseFunctionSpec(const std::string& text, const std::string& file,
                                               std::string_view default_policy = kDefaultPolicy);

// Reads `path` and parses it. NotFound/Internal naming the path when it cannot be read.
absl::StatusOr<FunctionSpec> LoadFunctionSpec(const std::string& path);

// Block-style YAML for `spec` that ParseFunctionSpec maps back to an equal spec (doubles are
// written in shortest round-trip form). Optional parts are written only when present.
std::string FunctionSpecToYaml(const FunctionSpec& spec);

// The stage functions of a pipeline spec, in stage order, each an ordinary inference spec with
// `stage_of` set: name "<pipeline>-<stage name>" ("<pipeline>-s<i>" for `stages: N`); the
// stage's fields or else the pipeline's; slo_ms = the stage's, else the pipeline's / count;
// model.name "<name>/s<i>of<N>" when the pipeline names a model (core/perf/pipeline_profile.h's
// keys); env SLUICE_PIPELINE, SLUICE_STAGE_INDEX, SLUICE_STAGE_COUNT added; "${STAGE_INDEX}" and
// "${STAGE_COUNT}" in the command replaced by the numbers. Requires spec.pipeline (validated by
// ParseFunctionSpec, so the names fit 63 chars); InvalidArgument otherwise.
absl::StatusOr<std::vector<FunctionSpec>> ExpandPipeline(const FunctionSpec& spec);

// spec.policy_params as the core registry takes them (key, value, line).
std::vector<core::PolicyParam> CorePolicyParams(const FunctionSpec& spec);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_SPEC_FUNCTION_SPEC_H_
