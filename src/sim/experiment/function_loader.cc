// One entry of `functions:`. Sections are parsed in order (identity, serving or training knobs,
// resources), then defaults come from the perf model and the result is checked against the
// cluster, so that every error points at the field the user must change; the SM quota comes last
// (quota_loader.cc), since profiling needs the kind, SLO, batch and tokens.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "sim/experiment/loader_internal.h"
#include "sim/experiment/yaml_fields.h"
#include "sim/workload/arrivals.h"

namespace sluice::sim::internal {
namespace {

using core::FunctionKind;

absl::StatusOr<FunctionKind> ParseKind(const StrictMap& m, const core::ModelInfo& model) {
  const FunctionKind model_kind = model.kind;
  SLUICE_ASSIGN_OR_RETURN(std::string kind, m.String("kind", ""));
  if (kind.empty()) return model_kind;
  if (kind == "training") return FunctionKind::kTraining;
  if (kind != "inference" && kind != "llm") {
    return m.ErrorAt("kind", absl::StrCat("unknown kind '", kind,
                                          "' (allowed: inference, training, llm)"));
  }
  const bool llm = kind == "llm";
  if (llm != (model_kind == FunctionKind::kLlmInference)) {
    return m.ErrorAt("kind", absl::StrCat("model '", model.name, "' is ",
                                          llm ? "not an LLM" : "an LLM", "; use kind: ",
                                          llm ? "inference" : "llm"));
  }
  return model_kind;
}

// Keys that only make sense for one kind of function.
absl::Status RejectKeys(const StrictMap& m, std::initializer_list<absl::string_view> keys,
                        absl::string_view why) {
  for (absl::string_view k : keys) {
    if (m.Has(k)) return m.ErrorAt(k, absl::StrCat("not allowed ", why));
  }
  return absl::OkStatus();
}



absl::Status ParseService(const StrictMap& f, FunctionConfig& fc) {
  if (!f.Has("service")) return absl::OkStatus();
  SLUICE_ASSIGN_OR_RETURN(StrictMap m, StrictMap::Create(f.Get("service"), f.file(),
                                                         f.FieldOf("service"),
                                                         {"exponential_mean_ms"}));
  SLUICE_ASSIGN_OR_RETURN(double mean,
                          m.Double("exponential_mean_ms", Range::kPositive, std::nullopt));
  if (fc.kind != FunctionKind::kInference) {
    return f.ErrorAt("service", "an exponential service time is for kind: inference only");
  }
  if (fc.max_batch != 1) {
    return f.ErrorAt("service", "an exponential service time needs batching.max_batch: 1");
  }
  fc.exponential_service_mean = absl::Milliseconds(mean);
  return absl::OkStatus();
}

// LLM functions: token counts for requests whose workload carries none.
absl::Status ParseTokens(const StrictMap& f, FunctionConfig& fc) {
  if (!f.Has("tokens")) return absl::OkStatus();
  if (fc.kind != FunctionKind::kLlmInference) {
    return f.ErrorAt("tokens", "only for LLM functions (kind: llm)");
  }
  SLUICE_ASSIGN_OR_RETURN(StrictMap m, StrictMap::Create(f.Get("tokens"), f.file(),
                                                         f.FieldOf("tokens"),
                                                         {"prompt", "output"}));
  constexpr int64_t kMaxTokens = 1 << 20;
  SLUICE_ASSIGN_OR_RETURN(int64_t prompt,
                          m.Int("prompt", Range::kNonNegative, fc.default_prompt_tokens));
  SLUICE_ASSIGN_OR_RETURN(int64_t output, m.Int("output", Range::kPositive,
                                                fc.default_output_tokens));
  if (prompt > kMaxTokens) return m.ErrorAt("prompt", absl::StrCat("must be <= ", kMaxTokens));
  if (output > kMaxTokens) return m.ErrorAt("output", absl::StrCat("must be <= ", kMaxTokens));
  fc.default_prompt_tokens = static_cast<int>(prompt);
  fc.default_output_tokens = static_cast<int>(output);
  return absl::OkStatus();
}

absl::Status ParseServing(const StrictMap& f, const LoadContext& ctx, FunctionConfig& fc) {
  SLUICE_RETURN_IF_ERROR(RejectKeys(f, {"training"}, "for an inference function"));
  SLUICE_RETURN_IF_ERROR(ParseTokens(f, fc));
  SLUICE_ASSIGN_OR_RETURN(double slo, f.Double("slo_ms", Range::kPositive, 100.0));
  fc.slo = absl::Milliseconds(slo);
  SLUICE_RETURN_IF_ERROR(ParseBatching(f, fc));
  SLUICE_RETURN_IF_ERROR(ParseInstances(f, fc));
  SLUICE_RETURN_IF_ERROR(ParseService(f, fc));
  SLUICE_ASSIGN_OR_RETURN(fc.capacity_rps, f.Double("capacity_rps", Range::kNonNegative, 0.0));
  if (!f.Has("workload")) return f.ErrorAt("workload", "required field is missing");
  SLUICE_ASSIGN_OR_RETURN(fc.workload, ParseWorkload(f.Get("workload"), f.FieldOf("workload"), ctx));
  if (fc.workload.kind == WorkloadKind::kNone) {
    return f.ErrorAt("workload", "an inference function needs arrivals");
  }
  return absl::OkStatus();
}

absl::Status ParseTraining(const StrictMap& f, FunctionConfig& fc) {
  SLUICE_RETURN_IF_ERROR(RejectKeys(f, {"workload", "batching", "slo_ms", "instances", "service",
                                        "capacity_rps", "gpus", "tokens"},
                                    "for a training function (see training:)"));
  if (!f.Has("training")) return f.ErrorAt("training", "required for kind: training");
  SLUICE_ASSIGN_OR_RETURN(StrictMap m, StrictMap::Create(f.Get("training"), f.file(),
                                                         f.FieldOf("training"),
                                                         {"workers", "iterations", "submit_at_s",
                                                          "same_node"}));
  TrainingConfig t;
  SLUICE_ASSIGN_OR_RETURN(int64_t workers, m.Int("workers", Range::kPositive, t.workers));
  if (workers > 65536) return m.ErrorAt("workers", "must be <= 65536");
  t.workers = static_cast<int>(workers);
  SLUICE_ASSIGN_OR_RETURN(t.iterations, m.Int("iterations", Range::kPositive, std::nullopt));
  SLUICE_ASSIGN_OR_RETURN(double submit, m.Double("submit_at_s", Range::kNonNegative, 0.0));
  t.submit_at = absl::Seconds(submit);
  SLUICE_ASSIGN_OR_RETURN(t.same_node, m.Bool("same_node", t.same_node));
  fc.training = t;
  fc.min_instances = 0;
  fc.initial_instances = 0;
  return absl::OkStatus();
}

struct ClusterLimits {
  core::Bytes largest_gpu_memory;
  int largest_node_gpus = 0;
  int64_t total_gpus = 0;
};

ClusterLimits LimitsOf(const core::ClusterSpec& cluster) {
  ClusterLimits l;
  for (const core::NodeSpec& n : cluster.nodes) {
    l.largest_gpu_memory = std::max(l.largest_gpu_memory, n.gpu.memory);
    l.largest_node_gpus = std::max(l.largest_node_gpus, n.gpu_count);
    l.total_gpus += n.gpu_count;
  }
  return l;
}

// Memory per GPU (explicit, or the model's footprint split over its shards), then the fit.
absl::Status ParseResources(const StrictMap& f, const core::ModelInfo& model,
                            const LoadContext& ctx, FunctionConfig& fc) {
  const bool training = fc.kind == FunctionKind::kTraining;
  if (!training) {
    SLUICE_ASSIGN_OR_RETURN(int64_t gpus, f.Int("gpus", Range::kPositive, 1));
    if (gpus > 65536) return f.ErrorAt("gpus", "must be <= 65536");
    fc.gpus = static_cast<int>(gpus);
  }
  const double per_gpu_gib = training ? model.gpu_memory.gib() : model.gpu_memory.gib() / fc.gpus;
  SLUICE_ASSIGN_OR_RETURN(double mem, f.Double("memory_gib", Range::kPositive, per_gpu_gib));
  fc.memory = core::Bytes::GiB(mem);
  const ClusterLimits limits = LimitsOf(ctx.cluster);
  const absl::string_view mem_field = f.Has("memory_gib") ? "memory_gib" : "model";
  if (fc.memory > limits.largest_gpu_memory) {
    return f.ErrorAt(mem_field, absl::StrFormat(
        "needs %.2f GiB per GPU but the largest GPU has %.2f GiB%s", fc.memory.gib(),
        limits.largest_gpu_memory.gib(), training ? "" : " (shard it with gpus: N)"));
  }
  const int gpus = training ? fc.training->workers : fc.gpus;
  const absl::string_view gpus_field = training ? "training" : "gpus";
  if (gpus > limits.total_gpus) {
    return f.ErrorAt(gpus_field, absl::StrCat("needs ", gpus, " GPUs but the cluster has ",
                                              limits.total_gpus));
  }
  if (training && fc.training->same_node && gpus > limits.largest_node_gpus) {
    return f.ErrorAt(gpus_field, absl::StrCat(gpus, " workers on one node (same_node) but the "
                                              "largest node has ", limits.largest_node_gpus,
                                              " GPUs"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseInstances(const StrictMap& f, FunctionConfig& fc) {
  if (!f.Has("instances")) return absl::OkStatus();
  SLUICE_ASSIGN_OR_RETURN(StrictMap m, StrictMap::Create(f.Get("instances"), f.file(),
                                                         f.FieldOf("instances"),
                                                         {"min", "max", "initial"}));
  constexpr int64_t kMax = 1 << 20;
  SLUICE_ASSIGN_OR_RETURN(int64_t min, m.Int("min", Range::kNonNegative, fc.min_instances));
  SLUICE_ASSIGN_OR_RETURN(int64_t max, m.Int("max", Range::kPositive, kMax));
  SLUICE_ASSIGN_OR_RETURN(int64_t initial, m.Int("initial", Range::kNonNegative,
                                                 std::clamp<int64_t>(1, min, max)));
  if (max > kMax) return m.ErrorAt("max", absl::StrCat("must be <= ", kMax));
  if (min > max) return m.ErrorAt("min", absl::StrCat("min (", min, ") > max (", max, ")"));
  if (initial < min || initial > max) {
    return m.ErrorAt("initial",
                     absl::StrCat("must be in [min, max] = [", min, ", ", max, "], got ", initial));
  }
  fc.min_instances = static_cast<int>(min);
  fc.max_instances = static_cast<int>(max);
  fc.initial_instances = static_cast<int>(initial);
  return absl::OkStatus();
}

absl::Status ParseBatching(const StrictMap& f, FunctionConfig& fc) {
  if (!f.Has("batching")) return absl::OkStatus();
  SLUICE_ASSIGN_OR_RETURN(StrictMap m, StrictMap::Create(f.Get("batching"), f.file(),
                                                         f.FieldOf("batching"),
                                                         {"max_batch", "max_queue_delay_ms"}));
  SLUICE_ASSIGN_OR_RETURN(int64_t batch, m.Int("max_batch", Range::kPositive, 1));
  if (batch > 4096) return m.ErrorAt("max_batch", "must be <= 4096");
  fc.max_batch = static_cast<int>(batch);
  SLUICE_ASSIGN_OR_RETURN(double delay, m.Double("max_queue_delay_ms", Range::kNonNegative, 0.0));
  fc.max_queue_delay = absl::Milliseconds(delay);
  return absl::OkStatus();
}

absl::StatusOr<WorkloadSpec> ParseWorkload(const YAML::Node& node, absl::string_view field,
                                           const LoadContext& ctx) {
  absl::StatusOr<WorkloadSpec> spec = ParseWorkloadSpec(node, ctx.file, ctx.base_dir);
  if (spec.ok() || !absl::IsInvalidArgument(spec.status())) return spec;
  // The workload parser names fields relative to the workload node ("rate_rps"); give the full
  // path so that every loader message reads the same way.
  std::string message(spec.status().message());
  const std::string marker = ": field '";
  const size_t at = message.find(marker);
  if (at == std::string::npos) return spec;
  const size_t key_start = at + marker.size();
  const size_t key_end = message.find('\'', key_start);
  if (key_end == std::string::npos) return spec;
  const std::string key = message.substr(key_start, key_end - key_start);
  const std::string full = key == "workload" ? std::string(field) : JoinField(field, key);
  message.replace(key_start, key_end - key_start, full);
  return absl::InvalidArgumentError(message);
}

absl::StatusOr<ParsedFunction> ParseFunction(const YAML::Node& node, int index,
                                             const LoadContext& ctx) {
  SLUICE_ASSIGN_OR_RETURN(
      StrictMap f, StrictMap::Create(node, ctx.file, absl::StrCat("functions[", index, "]"),
                                     {"name", "model", "kind", "slo_ms", "batching", "quota",
                                      "memory_gib", "gpus", "instances", "capacity_rps",
                                      "service", "tokens", "workload", "training"}));
  FunctionConfig fc;
  SLUICE_ASSIGN_OR_RETURN(fc.name, f.Name("name", std::nullopt));
  SLUICE_ASSIGN_OR_RETURN(fc.model, f.String("model", std::nullopt));
  absl::StatusOr<const core::ModelEntry*> entry = ctx.perf.Find(fc.model);
  if (!entry.ok()) {
    return f.ErrorAt("model", absl::StrCat("unknown model '", fc.model, "' (known: ",
                                           absl::StrJoin(ctx.perf.names(), ", "), ")"));
  }
  const core::ModelEntry& model = **entry;
  SLUICE_ASSIGN_OR_RETURN(fc.kind, ParseKind(f, model.info));
  if (fc.kind == FunctionKind::kTraining) {
    SLUICE_RETURN_IF_ERROR(ParseTraining(f, fc));
  } else {
    SLUICE_RETURN_IF_ERROR(ParseServing(f, ctx, fc));
  }
  SLUICE_RETURN_IF_ERROR(ParseResources(f, model.info, ctx, fc));
  SLUICE_ASSIGN_OR_RETURN(std::optional<FunctionProfile> profile,
                          ResolveQuota(f, model, ctx, fc));
  return ParsedFunction{std::move(fc), std::move(profile)};
}

}  // namespace sluice::sim::internal
