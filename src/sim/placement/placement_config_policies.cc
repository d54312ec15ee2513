// Policies, the sensitivity sweep and the paper block of a placement experiment file. Policies are
// built once here so that unknown names and bad params fail at load time, before any replay.
#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "common/status.h"
#include "core/registry/policy_registry.h"
#include "sim/placement/placement_config_internal.h"
#include "yaml-cpp/yaml.h"

namespace sluice::sim::internal {
namespace {

// Builds the policy once so that unknown names and bad params fail at load time.
// `name_line` locates the name in errors.
absl::Status CheckPolicy(const PlacementPolicyConfig& p, int name_line, const std::string& file,
                         const std::string& field) {
  const std::vector<std::string> known = core::KnownPolicies();
  if (std::find(known.begin(), known.end(), p.name) == known.end()) {
    return common::InputError(
        {file, name_line}, JoinField(field, "name"),
        absl::StrCat("unknown policy '", p.name, "'; known: ", absl::StrJoin(known, ", ")));
  }
  return core::MakePolicySet(p.name, p.params, file).status();
}

// One `key: value` of a policy map: name, label or a param for the registry.
absl::Status ParsePolicyEntry(const YAML::Node& key_node, const YAML::Node& value,
                              const std::string& file, const std::string& field,
                              PlacementPolicyConfig& p, int& name_line) {
  const std::string key = key_node.Scalar();
  const std::string kfield = JoinField(field, key);
  if (!key_node.IsScalar())
    return YamlError(file, key_node, field, "keys must be plain names");
  if (!value.IsScalar() || value.Scalar().empty()) {
    return YamlError(file, value, kfield, "must be a single non-empty value");
  }
  const bool repeated = std::any_of(p.params.begin(), p.params.end(),
                                    [&](const core::PolicyParam& q) { return q.key == key; });
  if (repeated || (key == "name" && !p.name.empty()) || (key == "label" && !p.label.empty())) {
    return YamlError(file, key_node, kfield, "duplicate field");
  }
  if (key == "name") {
    p.name = value.Scalar();
    name_line = YamlLine(value);
  } else if (key == "label") {
    p.label = value.Scalar();
  } else {
    p.params.push_back({key, value.Scalar(), YamlLine(value)});
  }
  return absl::OkStatus();
}

absl::StatusOr<PlacementPolicyConfig> ParsePolicy(const YAML::Node& node, const std::string& file,
                                                  const std::string& field) {
  PlacementPolicyConfig p;
  // A line, not a YAML::Node: assigning to a yaml-cpp Node rewrites the node it refers to.
  int name_line = YamlLine(node);
  if (node.IsScalar()) {
    p.name = node.Scalar();
  } else if (node.IsMap()) {
    for (const auto& kv : node) {
      SLUICE_RETURN_IF_ERROR(ParsePolicyEntry(kv.first, kv.second, file, field, p, name_line));
    }
  }
  if (p.name.empty()) {
    return YamlError(file, node, JoinField(field, "name"),
                     "a policy is a name or a map with a name: field");
  }
  SLUICE_RETURN_IF_ERROR(CheckPolicy(p, name_line, file, field));
  if (p.label.empty())
    p.label = p.name;
  if (!IsValidName(p.label)) {
    return YamlError(file, node, JoinField(field, "label"),
                     absl::StrCat("'", p.label, "' is not a valid name (1-64 characters of ",
                                  "A-Z a-z 0-9 . _ -, starting with a letter or digit)"));
  }
  return p;
}

absl::Status AddPolicy(PlacementPolicyConfig p, const YAML::Node& node, const std::string& file,
                       const std::string& field, std::vector<PlacementPolicyConfig>& out) {
  for (const PlacementPolicyConfig& q : out) {
    if (q.label == p.label) {
      return YamlError(file, node, field, absl::StrCat("duplicate policy label '", p.label, "'"));
    }
  }
  out.push_back(std::move(p));
  return absl::OkStatus();
}

// One `workload: {label: n, ...}` entry of paper.peak_active_gpus.
absl::Status ParsePaperWorkload(const YAML::Node& key, const YAML::Node& value,
                                const std::string& field, PlacementExperimentConfig& c) {
  const std::string workload = key.Scalar();
  const std::string wfield = JoinField(field, workload);
  const bool known = std::any_of(c.instances.begin(), c.instances.end(),
                                 [&](const InstanceSource& s) { return s.name == workload; });
  if (!known)
    return YamlError(c.file, key, wfield, "no such workload in instances");
  if (c.paper_peaks.contains(workload))
    return YamlError(c.file, key, wfield, "duplicate field");
  if (!value.IsMap())
    return YamlError(c.file, value, wfield, "must be a map {policy label: n}");
  std::map<std::string, double>& peaks = c.paper_peaks[workload];
  for (const auto& kv : value) {
    const std::string label = kv.first.Scalar();
    const std::string lfield = JoinField(wfield, label);
    const bool listed =
        std::any_of(c.policies.begin(), c.policies.end(),
                    [&](const PlacementPolicyConfig& p) { return p.label == label; });
    if (!listed)
      return YamlError(c.file, kv.first, lfield, "no policy with this label");
    if (peaks.contains(label))
      return YamlError(c.file, kv.first, lfield, "duplicate field");
    double v = 0;
    if (!kv.second.IsScalar() || !absl::SimpleAtod(kv.second.Scalar(), &v) || !(v >= 0) ||
        !std::isfinite(v)) {
      return YamlError(c.file, kv.second, lfield, "must be a number >= 0");
    }
    peaks[label] = v;
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<PlacementPolicyConfig>> ParsePolicies(const StrictMap& top) {
  const YAML::Node list = top.Get("policies");
  if (!top.Has("policies"))
    return top.ErrorAt("policies", "required field is missing");
  if (!list.IsSequence() || list.size() == 0) {
    return top.ErrorAt("policies", "must be a non-empty list of policies");
  }
  std::vector<PlacementPolicyConfig> policies;
  size_t i = 0;
  for (const YAML::Node& item : list) {
    const std::string field = absl::StrCat("policies[", i++, "]");
    SLUICE_ASSIGN_OR_RETURN(PlacementPolicyConfig p, ParsePolicy(item, top.file(), field));
    SLUICE_RETURN_IF_ERROR(AddPolicy(std::move(p), item, top.file(), field, policies));
  }
  return policies;
}

// One run per value: the base policy's params with `param` set to the value.
absl::Status ParseSensitivity(const StrictMap& top, std::vector<PlacementPolicyConfig>& policies) {
  if (!top.Has("sensitivity"))
    return absl::OkStatus();
  SLUICE_ASSIGN_OR_RETURN(StrictMap m,
                          StrictMap::Create(top.Get("sensitivity"), top.file(), "sensitivity",
                                            {"policy", "param", "values"}));
  SLUICE_ASSIGN_OR_RETURN(const std::string base_label, m.String("policy", std::nullopt));
  SLUICE_ASSIGN_OR_RETURN(const std::string param, m.Name("param", std::nullopt));
  auto base = std::find_if(policies.begin(), policies.end(),
                           [&](const PlacementPolicyConfig& p) { return p.label == base_label; });
  if (base == policies.end()) {
    return m.ErrorAt("policy", absl::StrCat("no policy labelled '", base_label, "'"));
  }
  const PlacementPolicyConfig base_copy = *base;
  const YAML::Node values = m.Get("values");
  if (!values.IsSequence() || values.size() == 0) {
    return m.ErrorAt("values", "must be a non-empty list of values");
  }
  size_t i = 0;
  for (const YAML::Node& value : values) {
    const std::string field = absl::StrCat("sensitivity.values[", i++, "]");
    if (!value.IsScalar() || value.Scalar().empty()) {
      return YamlError(top.file(), value, field, "must be a single value");
    }
    PlacementPolicyConfig p = base_copy;
    p.swept_param = param;
    p.swept_value = value.Scalar();
    p.label = absl::StrCat(base_copy.label, "-", param, "-", p.swept_value);
    std::erase_if(p.params, [&](const core::PolicyParam& q) { return q.key == param; });
    p.params.push_back({param, p.swept_value, YamlLine(value)});
    if (!IsValidName(p.label))
      return YamlError(top.file(), value, field, "not a valid name");
    SLUICE_RETURN_IF_ERROR(CheckPolicy(p, YamlLine(value), top.file(), field));
    SLUICE_RETURN_IF_ERROR(AddPolicy(std::move(p), value, top.file(), field, policies));
  }
  return absl::OkStatus();
}

absl::Status ParsePaper(const StrictMap& top, PlacementExperimentConfig& c) {
  if (!top.Has("paper"))
    return absl::OkStatus();
  SLUICE_ASSIGN_OR_RETURN(StrictMap m, StrictMap::Create(top.Get("paper"), c.file, "paper",
                                                         {"source", "peak_active_gpus"}));
  SLUICE_ASSIGN_OR_RETURN(c.paper_source, m.String("source", ""));
  if (!m.Has("peak_active_gpus"))
    return absl::OkStatus();
  const YAML::Node peaks = m.Get("peak_active_gpus");
  if (!peaks.IsMap()) {
    return m.ErrorAt("peak_active_gpus", "must be a map {workload: {policy label: n}}");
  }
  for (const auto& kv : peaks) {
    SLUICE_RETURN_IF_ERROR(
        ParsePaperWorkload(kv.first, kv.second, m.FieldOf("peak_active_gpus"), c));
  }
  return absl::OkStatus();
}

}  // namespace sluice::sim::internal
