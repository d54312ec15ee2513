// A `functions:` entry with `pipeline:` (issue 11, QUART): one model split into N stage
// functions "<name>/s<i>" (core/perf/pipeline_profile.h gives each stage's model key, memory,
// activation and CPU profile) plus a PipelineConfig; and the top-level `network:` block.
// Stateless; errors name file, line and field.
#include <algorithm>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "core/perf/pipeline_profile.h"
#include "sim/experiment/loader_internal.h"
#include "sim/experiment/yaml_fields.h"

namespace sluice::sim::internal {
namespace {

// What `pipeline:` says beyond the stage profiles.
struct PipelineSpec {
  std::string model;
  int stages = 0;
  std::vector<double> slo_multipliers = {1, 1.5, 2, 2.5, 3};
  core::PipelineCpuProfile cpu;  // cpu_slowdown: the stage profile's unless given
  std::optional<double> cpu_slowdown;
};

absl::StatusOr<std::vector<double>> ParseMultipliers(const StrictMap& p) {
  const YAML::Node list = p.Get("slo_multipliers");
  if (!list.IsSequence() || list.size() == 0) {
    return p.ErrorAt("slo_multipliers", "must be a non-empty list of positive numbers");
  }
  std::vector<double> out;
  int i = 0;
  for (const YAML::Node& item : list) {
    const std::string field = absl::StrCat(p.FieldOf("slo_multipliers"), "[", i++, "]");
    double v = 0;
    if (!item.IsScalar() || !YAML::convert<double>::decode(item, v) || !(v > 0) || v > 1e6) {
      return YamlError(p.file(), item, field, "must be a positive number <= 1e6");
    }
    out.push_back(v);
  }
  return out;
}

absl::Status ParseCpu(const StrictMap& p, PipelineSpec& spec) {
  if (!p.Has("cpu")) return absl::OkStatus();
  SLUICE_ASSIGN_OR_RETURN(StrictMap m, StrictMap::Create(p.Get("cpu"), p.file(), p.FieldOf("cpu"),
                                                         {"slowdown", "cores_per_worker",
                                                          "max_workers"}));
  if (m.Has("slowdown")) {
    SLUICE_ASSIGN_OR_RETURN(double s, m.Double("slowdown", Range::kNonNegative, std::nullopt));
    spec.cpu_slowdown = s;
  }
  SLUICE_ASSIGN_OR_RETURN(int64_t cores,
                          m.Int("cores_per_worker", Range::kPositive, spec.cpu.cores_per_worker));
  SLUICE_ASSIGN_OR_RETURN(int64_t workers,
                          m.Int("max_workers", Range::kNonNegative, spec.cpu.max_workers));
  if (cores > 4096) return m.ErrorAt("cores_per_worker", "must be <= 4096");
  if (workers > 4096) return m.ErrorAt("max_workers", "must be <= 4096");
  spec.cpu.cores_per_worker = static_cast<int>(cores);
  spec.cpu.max_workers = static_cast<int>(workers);
  return absl::OkStatus();
}

absl::StatusOr<PipelineSpec> ParseSpec(const StrictMap& f) {
  SLUICE_ASSIGN_OR_RETURN(StrictMap p, StrictMap::Create(f.Get("pipeline"), f.file(),
                                                         f.FieldOf("pipeline"),
                                                         {"model", "stages", "slo_multipliers",
                                                          "cpu"}));
  PipelineSpec spec;
  SLUICE_ASSIGN_OR_RETURN(spec.model, p.String("model", std::nullopt));
  if (!core::FindPipelineModel(spec.model).ok()) {
    return p.ErrorAt("model", absl::StrCat("unknown pipeline model '", spec.model, "' (known: ",
                                           absl::StrJoin(core::PipelineModelNames(), ", "), ")"));
  }
  const YAML::Node stages = p.Get("stages");
  if (!p.Has("stages") || stages.IsNull() || (stages.IsSequence() && stages.size() == 0)) {
    return p.ErrorAt("stages", "a pipeline needs its stages: a stage count N that divides the "
                               "model's layers (QUART uses 8)");
  }
  SLUICE_ASSIGN_OR_RETURN(int64_t n, p.Int("stages", Range::kPositive, std::nullopt));
  if (n > 4096) return p.ErrorAt("stages", "must be <= 4096");
  spec.stages = static_cast<int>(n);
  if (absl::StatusOr<std::vector<core::StageProfile>> split =
          core::SplitPipeline(spec.model, spec.stages, p.FieldOf("stages"));
      !split.ok()) {
    const std::string message(split.status().message());
    return p.ErrorAt("stages", message.substr(message.find("': ") + 3));
  }
  if (p.Has("slo_multipliers")) {
    SLUICE_ASSIGN_OR_RETURN(spec.slo_multipliers, ParseMultipliers(p));
  }
  SLUICE_RETURN_IF_ERROR(ParseCpu(p, spec));
  return spec;
}

core::Bytes LargestGpu(const core::ClusterSpec& cluster) {
  core::Bytes largest;
  for (const core::NodeSpec& n : cluster.nodes) largest = std::max(largest, n.gpu.memory);
  return largest;
}

// The settings every stage shares, from the function's own keys.
absl::StatusOr<FunctionConfig> StageTemplate(const StrictMap& f, const core::PipelineModelInfo& m,
                                             const LoadContext& ctx) {
  FunctionConfig t;
  t.kind = core::FunctionKind::kInference;
  t.max_batch = 1;  // QUART's M/M/c stage: one request at a time unless batching: says otherwise
  SLUICE_RETURN_IF_ERROR(ParseBatching(f, t));
  SLUICE_RETURN_IF_ERROR(ParseInstances(f, t));
  if (f.Has("quota")) {  // default: a whole GPU per stage replica, as QUART deploys them
    SLUICE_RETURN_IF_ERROR(ParseExplicitQuota(f, t));
  }
  SLUICE_ASSIGN_OR_RETURN(double slo_ms, f.Double("slo_ms", Range::kPositive,
                                                  1.5 * absl::ToDoubleMilliseconds(
                                                            m.standalone_exec)));
  t.slo = absl::Milliseconds(slo_ms);
  if (!f.Has("workload")) return f.ErrorAt("workload", "required field is missing");
  SLUICE_ASSIGN_OR_RETURN(t.workload, ParseWorkload(f.Get("workload"), f.FieldOf("workload"), ctx));
  if (t.workload.kind == WorkloadKind::kNone) {
    return f.ErrorAt("workload", "an inference function needs arrivals");
  }
  return t;
}

}  // namespace

absl::StatusOr<ParsedPipeline> ParsePipelineFunction(const YAML::Node& node, int index,
                                                     const LoadContext& ctx) {
  SLUICE_ASSIGN_OR_RETURN(
      StrictMap f, StrictMap::Create(node, ctx.file, absl::StrCat("functions[", index, "]"),
                                     {"name", "pipeline", "slo_ms", "batching", "quota",
                                      "instances", "workload"}));
  ParsedPipeline out;
  SLUICE_ASSIGN_OR_RETURN(out.pipeline.name, f.Name("name", std::nullopt));
  SLUICE_ASSIGN_OR_RETURN(const PipelineSpec spec, ParseSpec(f));
  const core::PipelineModelInfo model = *core::FindPipelineModel(spec.model);
  SLUICE_ASSIGN_OR_RETURN(FunctionConfig base, StageTemplate(f, model, ctx));
  const std::vector<core::StageProfile> profiles =
      *core::SplitPipeline(spec.model, spec.stages, "stages");
  const core::Bytes largest = LargestGpu(ctx.cluster);
  absl::Duration total_exec;
  for (const core::StageProfile& s : profiles) total_exec += s.exec_batch1;
  for (const core::StageProfile& s : profiles) {
    if (s.gpu_memory > largest) {
      return f.ErrorAt("pipeline", absl::StrFormat(
          "a stage of %s in %d needs %.2f GiB but the largest GPU has %.2f GiB (use more stages)",
          model.name, spec.stages, s.gpu_memory.gib(), largest.gib()));
    }
    FunctionConfig fc = base;
    fc.name = absl::StrCat(out.pipeline.name, "/s", s.index);
    fc.model = s.model_key;
    fc.memory = s.gpu_memory;
    if (s.index > 0) fc.workload = WorkloadSpec{};  // arrivals enter at stage 0 only
    // The stage's share of the end-to-end SLO, in proportion to its execution time.
    fc.slo = base.slo * (absl::ToDoubleSeconds(s.exec_batch1) / absl::ToDoubleSeconds(total_exec));
    PipelineStageConfig st;
    st.pipeline = out.pipeline.name;
    st.index = s.index;
    st.count = s.count;
    st.activation_out = s.activation_out;
    st.traits.service_cv = s.service_cv;
    st.traits.latency_target = fc.slo;
    st.traits.cpu = spec.cpu;
    st.traits.cpu.cpu_slowdown = spec.cpu_slowdown.value_or(s.cpu_slowdown);
    fc.stage = st;
    out.pipeline.stages.push_back(fc.name);
    out.stages.push_back(std::move(fc));
  }
  out.pipeline.slo = base.slo;
  out.pipeline.slo_base = model.standalone_exec;
  out.pipeline.slo_multipliers = spec.slo_multipliers;
  return out;
}

absl::StatusOr<std::optional<core::net::ClusterNetSpec>> ParseNetwork(const StrictMap& top) {
  if (!top.Has("network")) return std::nullopt;
  const YAML::Node node = top.Get("network");
  const std::string field = top.FieldOf("network");
  if (!node.IsMap()) return YamlError(top.file(), node, field, "must be a map");
  core::net::ClusterNetSpec spec;
  if (node["preset"]) {
    const YAML::Node p = node["preset"];
    absl::StatusOr<core::net::ClusterNetSpec> preset =
        p.IsScalar() ? core::net::NetPreset(p.Scalar()) : absl::NotFoundError("not a name");
    if (!preset.ok()) {
      return YamlError(top.file(), p, JoinField(field, "preset"),
                       absl::StrCat("unknown preset (known: ",
                                    absl::StrJoin(core::net::NetPresetNames(), ", "), ")"));
    }
    spec = *std::move(preset);
  }
  std::vector<std::string> seen;
  for (const auto& kv : node) {
    const std::string key = kv.first.IsScalar() ? kv.first.Scalar() : "";
    if (std::find(seen.begin(), seen.end(), key) != seen.end()) {
      return YamlError(top.file(), kv.first, JoinField(field, key), "duplicate field");
    }
    seen.push_back(key);
    if (key == "preset") continue;
    double v = 0;
    if (!kv.second.IsScalar() || !YAML::convert<double>::decode(kv.second, v)) {
      return YamlError(top.file(), kv.second, JoinField(field, key), "must be a number");
    }
    if (absl::Status s = core::net::SetNetSpecField(spec, key, v); !s.ok()) {
      return YamlError(top.file(), kv.first, JoinField(field, key), s.message());
    }
  }
  if (absl::Status s = core::net::ValidateNetSpec(spec); !s.ok()) {
    return YamlError(top.file(), node, field, s.message());
  }
  return spec;
}

}  // namespace sluice::sim::internal
