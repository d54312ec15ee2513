// The pipeline parts of the function spec (issue 11): `pipeline: {stages: N | [...]}` on a
// user's spec, `stage_of` on the stage functions the controller makes from it, and
// ExpandPipeline (one ordinary inference spec per stage). Errors name the field with the stage's
// index, e.g. "f.yaml:12: field 'pipeline.stages[1].batching.max_batch': must be an integer".
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"

#include "common/status.h"
#include "runtime/spec/function_spec.h"
#include "runtime/spec/spec_parts.h"

namespace sluice::runtime {
namespace spec_internal {
namespace {

constexpr int kMaxStages = 64;

// Re-labels an error of a part parser run on a stage's mapping: "field 'x'" -> "field 'p.x'".
absl::Status Prefixed(absl::Status status, const std::string& prefix) {
  if (status.ok())
    return status;
  const std::string message =
      absl::StrReplaceAll(status.message(), {{"field '", absl::StrCat("field '", prefix, ".")}});
  return absl::Status(status.code(), message);
}

std::string StageFunctionName(const std::string& pipeline, const std::string& stage) {
  return absl::StrCat(pipeline, "-", stage);
}

absl::Status CheckFunctionName(const YamlReader& r, const YAML::Node& at, const std::string& field,
                               const std::string& pipeline, const std::string& stage) {
  const std::string name = StageFunctionName(pipeline, stage);
  if (name.size() > 63) {
    return r.Error(at, field,
                   absl::StrCat("stage function name '", name, "' is longer than 63 chars"));
  }
  return absl::OkStatus();
}

absl::StatusOr<double> Positive(const YamlReader& r, const YAML::Node& node,
                                const std::string& field) {
  SLUICE_ASSIGN_OR_RETURN(double v, r.Double(node, field));
  if (v <= 0)
    return r.Error(node, field, "must be > 0");
  return v;
}

// The optional per-stage overrides, parsed by the whole spec's part parsers on the stage's map.
absl::Status ParseStageOverrides(const YamlReader& r, const YAML::Node& node,
                                 const std::string& field, PipelineStageSpec& stage) {
  FunctionSpec scratch;
  if (node["command"].IsDefined() || node["image"].IsDefined()) {
    SLUICE_RETURN_IF_ERROR(Prefixed(ParseLaunch(r, node, scratch), field));
    stage.command = scratch.command;
    stage.image = scratch.image;
  }
  if (const YAML::Node m = node["memory_gib"]; m.IsDefined()) {
    SLUICE_ASSIGN_OR_RETURN(stage.memory_gib, Positive(r, m, Join(field, "memory_gib")));
  }
  if (const YAML::Node s = node["slo_ms"]; s.IsDefined()) {
    SLUICE_ASSIGN_OR_RETURN(stage.slo_ms, Positive(r, s, Join(field, "slo_ms")));
  }
  SLUICE_RETURN_IF_ERROR(Prefixed(ParseBatching(r, node, scratch), field));
  SLUICE_RETURN_IF_ERROR(Prefixed(ParseAutoscaling(r, node, scratch), field));
  SLUICE_RETURN_IF_ERROR(Prefixed(ParseQuota(r, node, scratch), field));
  SLUICE_RETURN_IF_ERROR(Prefixed(ParseEnv(r, node, scratch), field));
  if (node["batching"].IsDefined())
    stage.batching = scratch.batching;
  if (node["autoscaling"].IsDefined())
    stage.autoscaling = scratch.autoscaling;
  stage.quota = scratch.quota;
  stage.env = scratch.env;
  return absl::OkStatus();
}

// One entry of the list form; `index` is its optional explicit position (-1: none).
absl::Status ParseStage(const YamlReader& r, const YAML::Node& node, const std::string& field,
                        const FunctionSpec& spec, PipelineStageSpec& stage, int& index) {
  SLUICE_RETURN_IF_ERROR(r.CheckMap(node, field,
                                    {"name", "index", "command", "image", "memory_gib", "slo_ms",
                                     "batching", "autoscaling", "quota", "env"}));
  SLUICE_ASSIGN_OR_RETURN(YAML::Node name, r.Required(node, field, "name"));
  SLUICE_ASSIGN_OR_RETURN(stage.name, r.String(name, Join(field, "name")));
  if (!IsDnsLabel(stage.name)) {
    return r.Error(name, Join(field, "name"),
                   "must be 1-63 chars of [a-z0-9-], starting and ending alphanumeric");
  }
  SLUICE_RETURN_IF_ERROR(CheckFunctionName(r, name, Join(field, "name"), spec.name, stage.name));
  index = -1;
  if (const YAML::Node i = node["index"]; i.IsDefined()) {
    SLUICE_ASSIGN_OR_RETURN(index, r.IntIn(i, Join(field, "index"), 0, kMaxStages - 1));
  }
  SLUICE_RETURN_IF_ERROR(ParseStageOverrides(r, node, field, stage));
  if (stage.command.empty() && stage.image.empty() && spec.command.empty() && spec.image.empty()) {
    return r.Error(node, Join(field, "command"),
                   "missing: the stage names no command or image and the pipeline has none");
  }
  return absl::OkStatus();
}

// Explicit `index`es (all stages or none) must be 0..n-1 exactly; stages are put in that order.
absl::Status OrderByIndex(const YamlReader& r, const YAML::Node& list,
                          const std::vector<int>& indices, std::vector<PipelineStageSpec>& stages) {
  const int n = static_cast<int>(stages.size());
  int given = 0;
  for (int i : indices)
    given += i >= 0 ? 1 : 0;
  if (given == 0)
    return absl::OkStatus();
  if (given != n) {
    return r.Error(list, "pipeline.stages", "give 'index' on every stage or on none");
  }
  std::vector<PipelineStageSpec> ordered(n);
  std::vector<bool> seen(n, false);
  for (int k = 0; k < n; ++k) {
    const std::string field = absl::StrCat("pipeline.stages[", k, "].index");
    if (indices[k] >= n) {
      return r.Error(list[k]["index"], field,
                     absl::StrCat("stage ", indices[k], " of a ", n, "-stage pipeline"));
    }
    if (seen[indices[k]])
      return r.Error(list[k]["index"], field, absl::StrCat("duplicate index ", indices[k]));
    seen[indices[k]] = true;
    ordered[indices[k]] = std::move(stages[k]);
  }
  stages = std::move(ordered);
  return absl::OkStatus();
}

absl::Status ParseStageList(const YamlReader& r, const YAML::Node& list, FunctionSpec& spec,
                            PipelineSpec& p) {
  if (list.size() == 0)
    return r.Error(list, "pipeline.stages", "must list at least one stage (stage count 0)");
  if (static_cast<int>(list.size()) > kMaxStages) {
    return r.Error(list, "pipeline.stages",
                   absl::StrCat("at most ", kMaxStages, " stages, got ", list.size()));
  }
  std::vector<int> indices;
  std::map<std::string, size_t> names;
  for (size_t k = 0; k < list.size(); ++k) {
    const std::string field = absl::StrCat("pipeline.stages[", k, "]");
    PipelineStageSpec stage;
    int index = -1;
    SLUICE_RETURN_IF_ERROR(ParseStage(r, list[k], field, spec, stage, index));
    if (auto [it, fresh] = names.emplace(stage.name, k); !fresh) {
      return r.Error(list[k]["name"], Join(field, "name"),
                     absl::StrCat("duplicate stage name '", stage.name, "' (also pipeline.stages[",
                                  it->second, "])"));
    }
    p.stages.push_back(std::move(stage));
    indices.push_back(index);
  }
  SLUICE_RETURN_IF_ERROR(OrderByIndex(r, list, indices, p.stages));
  p.count = static_cast<int>(p.stages.size());
  return absl::OkStatus();
}

}  // namespace

absl::Status ParsePipeline(const YamlReader& r, const YAML::Node& root, FunctionSpec& spec) {
  const YAML::Node node = root["pipeline"];
  if (!node.IsDefined())
    return absl::OkStatus();
  if (spec.kind != FunctionKind::kInference) {
    return r.Error(
        node, "pipeline",
        absl::StrCat("only allowed for kind inference, not ", FunctionKindName(spec.kind)));
  }
  SLUICE_RETURN_IF_ERROR(r.CheckMap(node, "pipeline", {"stages"}));
  SLUICE_ASSIGN_OR_RETURN(YAML::Node stages, r.Required(node, "pipeline", "stages"));
  PipelineSpec p;
  if (stages.IsSequence()) {
    SLUICE_RETURN_IF_ERROR(ParseStageList(r, stages, spec, p));
  } else if (stages.IsScalar()) {
    SLUICE_ASSIGN_OR_RETURN(p.count, r.IntIn(stages, "pipeline.stages", 1, kMaxStages));
    if (spec.command.empty() && spec.image.empty()) {
      return r.Error(root, "command",
                     "a pipeline of 'stages: N' runs the top-level command or image: set one");
    }
    SLUICE_RETURN_IF_ERROR(
        CheckFunctionName(r, stages, "pipeline.stages", spec.name, absl::StrCat("s", p.count - 1)));
  } else {
    return r.Error(stages, "pipeline.stages", "must be a stage count or a list of stages");
  }
  spec.pipeline = std::move(p);
  return absl::OkStatus();
}

absl::Status ParseStageOf(const YamlReader& r, const YAML::Node& root, FunctionSpec& spec) {
  const YAML::Node node = root["stage_of"];
  if (!node.IsDefined())
    return absl::OkStatus();
  if (spec.kind != FunctionKind::kInference || spec.pipeline) {
    return r.Error(node, "stage_of", "only allowed on an inference function without 'pipeline'");
  }
  SLUICE_RETURN_IF_ERROR(
      r.CheckMap(node, "stage_of", {"pipeline", "index", "count", "pipeline_slo_ms"}));
  StageOfSpec s;
  SLUICE_ASSIGN_OR_RETURN(YAML::Node name, r.Required(node, "stage_of", "pipeline"));
  SLUICE_ASSIGN_OR_RETURN(s.pipeline, r.String(name, "stage_of.pipeline"));
  if (!IsDnsLabel(s.pipeline))
    return r.Error(name, "stage_of.pipeline", "must be a function name (a DNS label)");
  SLUICE_ASSIGN_OR_RETURN(YAML::Node count, r.Required(node, "stage_of", "count"));
  SLUICE_ASSIGN_OR_RETURN(s.count, r.IntIn(count, "stage_of.count", 1, kMaxStages));
  SLUICE_ASSIGN_OR_RETURN(YAML::Node index, r.Required(node, "stage_of", "index"));
  SLUICE_ASSIGN_OR_RETURN(s.index, r.IntIn(index, "stage_of.index", 0, s.count - 1));
  SLUICE_ASSIGN_OR_RETURN(YAML::Node slo, r.Required(node, "stage_of", "pipeline_slo_ms"));
  SLUICE_ASSIGN_OR_RETURN(s.pipeline_slo_ms, Positive(r, slo, "stage_of.pipeline_slo_ms"));
  spec.stage_of = std::move(s);
  return absl::OkStatus();
}

}  // namespace spec_internal

namespace {

FunctionSpec StageSpec(const FunctionSpec& spec, int i, const PipelineStageSpec* stage) {
  const int n = spec.pipeline->count;
  FunctionSpec s = spec;
  s.pipeline.reset();
  s.name = absl::StrCat(spec.name, "-", stage != nullptr ? stage->name : absl::StrCat("s", i));
  if (!spec.model.name.empty())
    s.model.name = absl::StrCat(spec.model.name, "/s", i, "of", n);
  s.slo_ms = *spec.slo_ms / n;
  s.env["SLUICE_PIPELINE"] = spec.name;
  s.env["SLUICE_STAGE_INDEX"] = absl::StrCat(i);
  s.env["SLUICE_STAGE_COUNT"] = absl::StrCat(n);
  if (stage != nullptr) {
    if (!stage->command.empty() || !stage->image.empty()) {
      s.command = stage->command;
      s.image = stage->image;
    }
    s.memory_gib = stage->memory_gib.value_or(s.memory_gib);
    s.slo_ms = stage->slo_ms.value_or(*s.slo_ms);
    s.batching = stage->batching.value_or(s.batching);
    s.autoscaling = stage->autoscaling.value_or(s.autoscaling);
    if (stage->quota)
      s.quota = stage->quota;
    for (const auto& [k, v] : stage->env)
      s.env[k] = v;
  }
  for (std::string& arg : s.command) {
    arg = absl::StrReplaceAll(
        arg, {{"${STAGE_INDEX}", absl::StrCat(i)}, {"${STAGE_COUNT}", absl::StrCat(n)}});
  }
  s.stage_of = StageOfSpec{spec.name, i, n, *spec.slo_ms};
  return s;
}

}  // namespace

absl::StatusOr<std::vector<FunctionSpec>> ExpandPipeline(const FunctionSpec& spec) {
  if (!spec.pipeline || !spec.slo_ms || spec.pipeline->count < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("function '", spec.name, "' is not a pipeline (no 'pipeline' block)"));
  }
  std::vector<FunctionSpec> out;
  for (int i = 0; i < spec.pipeline->count; ++i) {
    const PipelineStageSpec* stage =
        spec.pipeline->stages.empty() ? nullptr : &spec.pipeline->stages[i];
    out.push_back(StageSpec(spec, i, stage));
  }
  return out;
}

}  // namespace sluice::runtime
