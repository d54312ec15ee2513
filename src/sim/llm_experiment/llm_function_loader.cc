// One `functions:` entry of an llm_serving experiment: the model (checked against the LLM perf
// model), SLOs with BlitzScale's defaults, pool sizes checked against the cluster, batching
// limits, and the workload through sim::ParseWorkloadSpec.
#include <algorithm>
#include <memory>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "common/status.h"
#include "core/perf/llm_perf_model.h"
#include "sim/experiment/yaml_fields.h"
#include "sim/llm_experiment/llm_loader_internal.h"
#include "sim/workload/arrivals.h"

namespace sluice::sim::llm::internal {
namespace {

// The workload parser names fields relative to the workload node ("scale"); rewrite the field
// to its full path ("functions[0].workload.scale") so that every message reads the same way.
absl::StatusOr<WorkloadSpec> ParseWorkload(const StrictMap& f, const LlmLoadContext& ctx) {
  const std::string field = f.FieldOf("workload");
  if (!f.Has("workload"))
    return f.ErrorAt("workload", "required field is missing");
  absl::StatusOr<WorkloadSpec> spec = ParseWorkloadSpec(f.Get("workload"), ctx.file, ctx.base_dir);
  if (!spec.ok()) {
    std::string message(spec.status().message());
    const std::string marker = ": field '";
    const size_t at = message.find(marker);
    const size_t key_start = at == std::string::npos ? at : at + marker.size();
    const size_t key_end = at == std::string::npos ? at : message.find('\'', key_start);
    if (key_end == std::string::npos)
      return spec.status();
    const std::string key = message.substr(key_start, key_end - key_start);
    message.replace(key_start, key_end - key_start,
                    key == "workload" ? field : JoinField(field, key));
    return absl::InvalidArgumentError(message);
  }
  if (spec->kind == WorkloadKind::kNone) {
    return f.ErrorAt("workload", "an LLM function needs arrivals (kind: none is for training)");
  }
  return spec;
}

absl::StatusOr<int> IntField(const StrictMap& f, absl::string_view key, Range range, int fallback,
                             int64_t max) {
  SLUICE_ASSIGN_OR_RETURN(int64_t v, f.Int(key, range, fallback));
  if (v > max)
    return f.ErrorAt(key, absl::StrCat("must be <= ", max));
  return static_cast<int>(v);
}

// Checks the model, tp and GPU against the perf model; sets fc.tp to the effective degree.
absl::Status CheckModel(const StrictMap& f, const LlmLoadContext& ctx, LlmFunctionConfig& fc) {
  const std::vector<std::string> known = core::BuiltinLlmModelNames();
  if (std::find(known.begin(), known.end(), fc.model) == known.end()) {
    return f.ErrorAt("model", absl::StrCat("unknown LLM model '", fc.model,
                                           "' (known: ", absl::StrJoin(known, ", "), ")"));
  }
  absl::StatusOr<std::unique_ptr<core::LlmPerfModel>> model =
      core::BuiltinLlmModel(fc.model, ctx.gpu, fc.tp);
  if (!model.ok()) {
    return f.ErrorAt(f.Has("tp") ? "tp" : "model", model.status().message());
  }
  fc.tp = (*model)->spec().tp;
  if (fc.tp > ctx.cluster.gpus_per_node) {
    return f.ErrorAt(f.Has("tp") ? "tp" : "model",
                     absl::StrCat("tensor parallelism ", fc.tp, " exceeds the cluster's ",
                                  ctx.cluster.gpus_per_node, " GPUs per node"));
  }
  return absl::OkStatus();
}

absl::Status ParsePools(const StrictMap& f, const LlmLoadContext& ctx, LlmFunctionConfig& fc) {
  SLUICE_ASSIGN_OR_RETURN(fc.disaggregated, f.Bool("disaggregated", fc.disaggregated));
  if (!fc.disaggregated && f.Has("initial_decode")) {
    return f.ErrorAt("initial_decode",
                     "is for disaggregated functions only (colocated "
                     "instances are counted by initial_prefill)");
  }
  SLUICE_ASSIGN_OR_RETURN(fc.initial_prefill, IntField(f, "initial_prefill", Range::kNonNegative,
                                                       fc.initial_prefill, 100000));
  SLUICE_ASSIGN_OR_RETURN(fc.initial_decode, IntField(f, "initial_decode", Range::kNonNegative,
                                                      fc.initial_decode, 100000));
  if (!fc.disaggregated)
    fc.initial_decode = 0;
  const int64_t gpus = int64_t{ctx.cluster.nodes} * ctx.cluster.gpus_per_node;
  const int64_t wanted = int64_t{fc.initial_prefill + fc.initial_decode} * fc.tp;
  if (wanted > gpus) {
    return f.ErrorAt(f.Has("initial_prefill") ? "initial_prefill" : "initial_decode",
                     absl::StrCat("the initial instances need ", wanted, " GPUs (tp ", fc.tp,
                                  "), the cluster has ", gpus));
  }
  return absl::OkStatus();
}

absl::Status ParseLimits(const StrictMap& f, LlmFunctionConfig& fc) {
  SLUICE_ASSIGN_OR_RETURN(fc.max_batch_tokens, IntField(f, "max_batch_tokens", Range::kPositive,
                                                        fc.max_batch_tokens, 1 << 24));
  SLUICE_ASSIGN_OR_RETURN(fc.max_decode_batch, IntField(f, "max_decode_batch", Range::kPositive,
                                                        fc.max_decode_batch, 1 << 20));
  SLUICE_ASSIGN_OR_RETURN(
      fc.default_prompt_tokens,
      IntField(f, "default_prompt_tokens", Range::kPositive, fc.default_prompt_tokens, 1 << 24));
  SLUICE_ASSIGN_OR_RETURN(
      fc.default_output_tokens,
      IntField(f, "default_output_tokens", Range::kPositive, fc.default_output_tokens, 1 << 24));
  return absl::OkStatus();
}

absl::Status ParseSlos(const StrictMap& f, LlmFunctionConfig& fc) {
  const SloDefaults d = DefaultSlos(fc.model);
  SLUICE_ASSIGN_OR_RETURN(double ttft, f.Double("ttft_slo_ms", Range::kPositive, d.ttft_ms));
  SLUICE_ASSIGN_OR_RETURN(double tbt, f.Double("tbt_slo_ms", Range::kPositive, d.tbt_ms));
  fc.ttft_slo = absl::Milliseconds(ttft);
  fc.tbt_slo = absl::Milliseconds(tbt);
  return absl::OkStatus();
}

}  // namespace

SloDefaults DefaultSlos(const std::string& model) {
  if (absl::StrContains(absl::AsciiStrToLower(model), "70b"))
    return {1250, 200};
  return {450, 150};
}

absl::StatusOr<LlmFunctionConfig> ParseLlmFunction(const YAML::Node& node, int index,
                                                   const LlmLoadContext& ctx) {
  SLUICE_ASSIGN_OR_RETURN(
      StrictMap f, StrictMap::Create(
                       node, ctx.file, absl::StrCat("functions[", index, "]"),
                       {"name", "model", "tp", "disaggregated", "ttft_slo_ms", "tbt_slo_ms",
                        "initial_prefill", "initial_decode", "max_batch_tokens", "max_decode_batch",
                        "default_prompt_tokens", "default_output_tokens", "workload"}));
  LlmFunctionConfig fc;
  SLUICE_ASSIGN_OR_RETURN(fc.name, f.Name("name", std::nullopt));
  SLUICE_ASSIGN_OR_RETURN(fc.model, f.String("model", std::nullopt));
  SLUICE_ASSIGN_OR_RETURN(fc.tp, IntField(f, "tp", Range::kNonNegative, 0, 64));
  SLUICE_RETURN_IF_ERROR(CheckModel(f, ctx, fc));
  SLUICE_RETURN_IF_ERROR(ParseSlos(f, fc));
  SLUICE_RETURN_IF_ERROR(ParsePools(f, ctx, fc));
  SLUICE_RETURN_IF_ERROR(ParseLimits(f, fc));
  SLUICE_ASSIGN_OR_RETURN(fc.workload, ParseWorkload(f, ctx));
  return fc;
}

}  // namespace sluice::sim::llm::internal
