// Top level of an llm_serving experiment: run settings, the GPU, policies (core::llm's policy
// sets by name), bursts and cross-section checks. yaml-cpp throws; ParseLlmExperiment is the
// only catch site (malformed YAML -> its line).
#include "sim/llm_experiment/llm_loader.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "common/status.h"
#include "core/llm/llm_policies.h"
#include "core/perf/llm_perf_model.h"
#include "sim/experiment/yaml_fields.h"
#include "sim/llm_experiment/llm_loader_internal.h"

namespace sluice::sim::llm {
namespace {

// The keys of a policy map: name, label, and everything else as the set's own params.
absl::Status ReadPolicyMap(const YAML::Node& node, const std::string& field,
                           const std::string& file, std::string& name, std::string& label,
                           std::vector<core::PolicyParam>& params, YAML::Node& name_node) {
  for (const auto& kv : node) {
    if (!kv.first.IsScalar())
      return YamlError(file, kv.first, field, "keys must be plain names");
    const std::string key = kv.first.Scalar();
    const std::string kfield = JoinField(field, key);
    if (!kv.second.IsScalar() || kv.second.Scalar().empty()) {
      return YamlError(file, kv.second, kfield, "must be a single non-empty value");
    }
    bool seen = (key == "name" && !name.empty()) || (key == "label" && !label.empty());
    for (const core::PolicyParam& q : params)
      seen = seen || q.key == key;
    if (seen)
      return YamlError(file, kv.first, kfield, "duplicate field");
    if (key == "name") {
      name = kv.second.Scalar();
      name_node.reset(kv.second);  // reset(), not operator=: that would rewrite the map
    } else if (key == "label") {
      label = kv.second.Scalar();
    } else {
      params.push_back({key, kv.second.Scalar(), YamlLine(kv.second)});
    }
  }
  return absl::OkStatus();
}

// A policy entry: `name` or {name, label, <param>: <value>...}.
absl::StatusOr<LlmPolicyConfig> ParsePolicy(const YAML::Node& node, const std::string& field,
                                            const std::string& file) {
  std::string name, label;
  std::vector<core::PolicyParam> params;
  YAML::Node name_node = node;
  if (node.IsScalar())
    name = node.Scalar();
  if (node.IsMap()) {
    SLUICE_RETURN_IF_ERROR(ReadPolicyMap(node, field, file, name, label, params, name_node));
  }
  if (name.empty()) {
    return YamlError(file, node, JoinField(field, "name"),
                     "a policy is a name or a map with a name: field");
  }
  const std::vector<std::string> known = core::llm::LlmPolicySetNames();
  if (std::find(known.begin(), known.end(), name) == known.end()) {
    return YamlError(
        file, name_node, JoinField(field, "name"),
        absl::StrCat("unknown LLM policy '", name, "' (known: ", absl::StrJoin(known, ", "), ")"));
  }
  LlmPolicyConfig p;
  SLUICE_ASSIGN_OR_RETURN(p.set, core::llm::MakeLlmPolicySet(name, params, file));
  p.label = label.empty() ? name : label;
  if (!IsValidName(p.label)) {
    return YamlError(file, node, JoinField(field, "label"),
                     absl::StrCat("'", p.label, "' is not a valid name (1-64 characters of ",
                                  "A-Z a-z 0-9 . _ - +, starting with a letter or digit)"));
  }
  return p;
}

absl::StatusOr<std::vector<LlmPolicyConfig>> ParsePolicies(const StrictMap& top) {
  return ParseLabelledPolicies<LlmPolicyConfig>(top, ParsePolicy);
}

absl::Status ParseFunctions(const StrictMap& top, const internal::LlmLoadContext& ctx,
                            LlmSimConfig& c) {
  if (!top.Has("functions"))
    return top.ErrorAt("functions", "required field is missing");
  const YAML::Node list = top.Get("functions");
  if (!list.IsSequence() || list.size() == 0) {
    return top.ErrorAt("functions", "must be a non-empty list of functions");
  }
  int i = 0;
  for (const YAML::Node& item : list) {
    SLUICE_ASSIGN_OR_RETURN(LlmFunctionConfig f, internal::ParseLlmFunction(item, i, ctx));
    for (const LlmFunctionConfig& g : c.functions) {
      if (g.name == f.name) {
        return YamlError(ctx.file, item, absl::StrCat("functions[", i, "].name"),
                         absl::StrCat("duplicate function name '", f.name, "'"));
      }
      // Functions of one model share the engine's parameter pool entry (copies of the model
      // on any function's instances are sources for the others' loads).
      if (g.model == f.model && g.tp != f.tp) {
        return YamlError(ctx.file, item, absl::StrCat("functions[", i, "].tp"),
                         absl::StrCat("model '", f.model, "' is served by function '", g.name,
                                      "' at tp ", g.tp, ": functions of one model share its "
                                      "parameter copies and need the same tp"));
      }
    }
    c.functions.push_back(std::move(f));
    ++i;
  }
  return absl::OkStatus();
}

absl::StatusOr<BurstConfig> ParseBurst(const YAML::Node& node, const std::string& field,
                                       const LlmSimConfig& c) {
  SLUICE_ASSIGN_OR_RETURN(StrictMap m,
                          StrictMap::Create(node, c.source_file, field,
                                            {"function", "at_s", "factor", "ramp_s", "hold_s"}));
  BurstConfig b;
  SLUICE_ASSIGN_OR_RETURN(b.function, m.String("function", std::nullopt));
  if (std::none_of(c.functions.begin(), c.functions.end(),
                   [&](const LlmFunctionConfig& f) { return f.name == b.function; })) {
    return m.ErrorAt("function", absl::StrCat("no function named '", b.function, "'"));
  }
  SLUICE_ASSIGN_OR_RETURN(double at, m.Double("at_s", Range::kNonNegative, std::nullopt));
  if (absl::Seconds(at) >= c.duration)
    return m.ErrorAt("at_s", "must be < duration_s");
  SLUICE_ASSIGN_OR_RETURN(b.factor, m.Double("factor", Range::kPositive, b.factor));
  if (b.factor > 1000)
    return m.ErrorAt("factor", "must be <= 1000");
  SLUICE_ASSIGN_OR_RETURN(double ramp,
                          m.Double("ramp_s", Range::kNonNegative, absl::ToDoubleSeconds(b.ramp)));
  SLUICE_ASSIGN_OR_RETURN(double hold,
                          m.Double("hold_s", Range::kNonNegative, absl::ToDoubleSeconds(b.hold)));
  b.at = absl::Seconds(at);
  b.ramp = absl::Seconds(ramp);
  b.hold = absl::Seconds(hold);
  return b;
}

absl::Status ParseBursts(const StrictMap& top, LlmSimConfig& c) {
  if (!top.Has("bursts"))
    return absl::OkStatus();
  const YAML::Node list = top.Get("bursts");
  if (!list.IsSequence())
    return top.ErrorAt("bursts", "must be a list of bursts");
  size_t i = 0;
  for (const YAML::Node& item : list) {
    SLUICE_ASSIGN_OR_RETURN(BurstConfig b, ParseBurst(item, absl::StrCat("bursts[", i++, "]"), c));
    c.bursts.push_back(std::move(b));
  }
  return absl::OkStatus();
}

// failures: [{at_s, node, gpu}]: gpu omitted or -1 = the whole node.
absl::StatusOr<FailureConfig> ParseFailure(const YAML::Node& node, const std::string& field,
                                           const LlmSimConfig& c) {
  SLUICE_ASSIGN_OR_RETURN(StrictMap m,
                          StrictMap::Create(node, c.source_file, field, {"at_s", "node", "gpu"}));
  FailureConfig f;
  SLUICE_ASSIGN_OR_RETURN(double at, m.Double("at_s", Range::kNonNegative, std::nullopt));
  if (absl::Seconds(at) >= c.duration)
    return m.ErrorAt("at_s", "must be < duration_s");
  f.at = absl::Seconds(at);
  SLUICE_ASSIGN_OR_RETURN(int64_t n, m.Int("node", Range::kNonNegative, std::nullopt));
  if (n >= c.cluster.nodes) {
    return m.ErrorAt("node", absl::StrCat("must be < the cluster's ", c.cluster.nodes, " nodes"));
  }
  f.node = static_cast<int>(n);
  SLUICE_ASSIGN_OR_RETURN(int64_t g, m.Int("gpu", Range::kAny, -1));
  if (g < -1 || g >= c.cluster.gpus_per_node) {
    return m.ErrorAt("gpu", absl::StrCat("must be -1 (the whole node) or in [0, ",
                                         c.cluster.gpus_per_node, ")"));
  }
  f.gpu = static_cast<int>(g);
  return f;
}

absl::Status ParseFailures(const StrictMap& top, LlmSimConfig& c) {
  if (!top.Has("failures"))
    return absl::OkStatus();
  const YAML::Node list = top.Get("failures");
  if (!list.IsSequence())
    return top.ErrorAt("failures", "must be a list of {at_s, node, gpu}");
  size_t i = 0;
  for (const YAML::Node& item : list) {
    SLUICE_ASSIGN_OR_RETURN(FailureConfig f,
                            ParseFailure(item, absl::StrCat("failures[", i++, "]"), c));
    c.failures.push_back(f);
  }
  return absl::OkStatus();
}

// A duration in seconds: `key` in range, at most a year.
absl::StatusOr<absl::Duration> Seconds(const StrictMap& top, absl::string_view key, Range range,
                                       absl::Duration fallback) {
  SLUICE_ASSIGN_OR_RETURN(double s, top.Double(key, range, absl::ToDoubleSeconds(fallback)));
  if (s > 365 * 86400.0)
    return top.ErrorAt(key, "must be <= 31536000 (a year)");
  return absl::Seconds(s);
}

absl::Status ParseRunSettings(const StrictMap& top, LlmSimConfig& c) {
  std::string stem = std::filesystem::path(c.source_file).stem().string();
  SLUICE_ASSIGN_OR_RETURN(c.name, top.String("experiment", stem.empty() ? "experiment" : stem));
  SLUICE_RETURN_IF_ERROR(top.String("description", "-").status());
  SLUICE_ASSIGN_OR_RETURN(std::string kind, top.String("kind", std::nullopt));
  if (kind != "llm_serving") {
    return top.ErrorAt("kind", absl::StrCat("'", kind,
                                            "' is not an LLM serving experiment "
                                            "(this loader reads kind: llm_serving)"));
  }
  SLUICE_ASSIGN_OR_RETURN(int64_t seed, top.Int("seed", Range::kNonNegative, 1));
  c.seed = static_cast<uint64_t>(seed);
  SLUICE_ASSIGN_OR_RETURN(c.duration, Seconds(top, "duration_s", Range::kPositive, c.duration));
  SLUICE_ASSIGN_OR_RETURN(c.sample_interval,
                          Seconds(top, "sample_interval_s", Range::kPositive, c.sample_interval));
  if (c.sample_interval > c.duration) {
    return top.ErrorAt("sample_interval_s", "must be <= duration_s");
  }
  SLUICE_ASSIGN_OR_RETURN(c.drain_timeout,
                          Seconds(top, "drain_timeout_s", Range::kNonNegative, c.drain_timeout));
  SLUICE_ASSIGN_OR_RETURN(c.instance_start,
                          Seconds(top, "instance_start_s", Range::kNonNegative, c.instance_start));
  SLUICE_ASSIGN_OR_RETURN(c.merge_scale_rounds,
                          top.Bool("merge_scale_rounds", c.merge_scale_rounds));
  SLUICE_ASSIGN_OR_RETURN(c.gpu, top.String("gpu", c.gpu));
  const std::vector<std::string> models = core::BuiltinLlmModelNames();
  if (!models.empty()) {
    absl::StatusOr<std::unique_ptr<core::LlmPerfModel>> probe =
        core::BuiltinLlmModel(models.front(), c.gpu);
    if (absl::IsNotFound(probe.status()))
      return top.ErrorAt("gpu", probe.status().message());
  }
  return absl::OkStatus();
}

absl::StatusOr<LlmSimConfig> ParseTop(const YAML::Node& root, const std::string& path) {
  LlmSimConfig c;
  c.source_file = path;
  SLUICE_ASSIGN_OR_RETURN(
      StrictMap top, StrictMap::Create(root, path, "",
                                       {"experiment", "kind", "description", "seed", "duration_s",
                                        "sample_interval_s", "drain_timeout_s", "instance_start_s",
                                        "gpu", "cluster", "functions", "bursts", "failures",
                                        "merge_scale_rounds", "policies"}));
  SLUICE_RETURN_IF_ERROR(ParseRunSettings(top, c));
  if (!top.Has("cluster"))
    return top.ErrorAt("cluster", "required field is missing");
  SLUICE_ASSIGN_OR_RETURN(c.cluster, internal::ParseLlmCluster(top.Get("cluster"), path));
  const std::string base_dir = std::filesystem::path(path).parent_path().string();
  const internal::LlmLoadContext ctx{path, base_dir.empty() ? "." : base_dir, c.gpu, c.cluster};
  SLUICE_RETURN_IF_ERROR(ParseFunctions(top, ctx, c));
  SLUICE_RETURN_IF_ERROR(ParseBursts(top, c));
  SLUICE_RETURN_IF_ERROR(ParseFailures(top, c));
  SLUICE_ASSIGN_OR_RETURN(c.policies, ParsePolicies(top));
  return c;
}

}  // namespace

absl::StatusOr<LlmSimConfig> ParseLlmExperiment(const std::string& text, const std::string& path) {
  try {
    const YAML::Node root = YAML::Load(text);
    return ParseTop(root, path);
  } catch (const YAML::Exception& e) {
    const int line = e.mark.is_null() || e.mark.line < 0 ? 0 : e.mark.line + 1;
    return common::InputError({path, line}, "", absl::StrCat("malformed YAML: ", e.msg));
  }
}

absl::StatusOr<LlmSimConfig> LoadLlmExperiment(const std::string& path) {
  SLUICE_ASSIGN_OR_RETURN(const std::string text, ReadExperimentFile(path));
  return ParseLlmExperiment(text, path);
}

absl::Status SelectLlmPolicies(const std::vector<std::string>& wanted, LlmSimConfig& config) {
  if (wanted.empty())
    return absl::OkStatus();
  for (const std::string& w : wanted) {
    if (std::none_of(config.policies.begin(), config.policies.end(),
                     [&](const LlmPolicyConfig& p) { return p.label == w || p.set.name == w; })) {
      std::vector<std::string> labels;
      for (const LlmPolicyConfig& p : config.policies)
        labels.push_back(p.label);
      return absl::InvalidArgumentError(
          absl::StrCat("--policy ", w, ": no such policy in ", config.source_file,
                       " (policies: ", absl::StrJoin(labels, ", "), ")"));
    }
  }
  std::vector<LlmPolicyConfig> kept;
  for (LlmPolicyConfig& p : config.policies) {
    if (std::any_of(wanted.begin(), wanted.end(),
                    [&](const std::string& w) { return p.label == w || p.set.name == w; })) {
      kept.push_back(std::move(p));
    }
  }
  config.policies = std::move(kept);
  return absl::OkStatus();
}

}  // namespace sluice::sim::llm
