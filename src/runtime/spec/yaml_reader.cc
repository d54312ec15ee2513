// Out-of-line pieces of yaml_reader.h.
#include "runtime/spec/yaml_reader.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "common/status.h"

namespace sluice::runtime::spec_internal {

std::string Join(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : absl::StrCat(prefix, ".", key);
}

absl::Status YamlReader::Error(const YAML::Node& node, const std::string& field,
                               const std::string& message) const {
  return common::InputError({file_, node.Mark().line + 1}, field, message);
}

absl::Status YamlReader::CheckMap(const YAML::Node& node, const std::string& field,
                                  const std::vector<std::string>& allowed) const {
  if (!node.IsMap()) {
    return Error(node, field.empty() ? "<document>" : field, "must be a mapping");
  }
  std::set<std::string> seen;
  for (const auto& entry : node) {
    if (!entry.first.IsScalar()) {
      return Error(entry.first, field.empty() ? "<document>" : field, "keys must be scalars");
    }
    const std::string key = entry.first.Scalar();
    if (std::find(allowed.begin(), allowed.end(), key) == allowed.end()) {
      return Error(entry.first, Join(field, key),
                   absl::StrCat("unknown key (allowed: ", absl::StrJoin(allowed, ", "), ")"));
    }
    if (!seen.insert(key).second) {
      return Error(entry.first, Join(field, key), "duplicate key");
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<YAML::Node> YamlReader::Required(const YAML::Node& map, const std::string& prefix,
                                                const std::string& key) const {
  YAML::Node value = map[key];
  if (!value.IsDefined() || value.IsNull()) {
    return Error(map, Join(prefix, key), "is required");
  }
  return value;
}

absl::StatusOr<std::string> YamlReader::String(const YAML::Node& node,
                                               const std::string& field) const {
  if (!node.IsScalar()) {
    return Error(node, field, "must be a string");
  }
  return node.Scalar();
}

absl::StatusOr<int64_t> YamlReader::Int(const YAML::Node& node, const std::string& field) const {
  int64_t value = 0;
  if (!node.IsScalar() || !YAML::convert<int64_t>::decode(node, value)) {
    return Error(node, field, "must be an integer");
  }
  return value;
}

absl::StatusOr<double> YamlReader::Double(const YAML::Node& node, const std::string& field) const {
  double value = 0.0;
  if (!node.IsScalar() || !YAML::convert<double>::decode(node, value) || !std::isfinite(value)) {
    return Error(node, field, "must be a finite number");
  }
  return value;
}

absl::StatusOr<int> YamlReader::IntIn(const YAML::Node& node, const std::string& field, int64_t lo,
                                      int64_t hi) const {
  SLUICE_ASSIGN_OR_RETURN(int64_t value, Int(node, field));
  if (value < lo || value > hi) {
    return Error(node, field, absl::StrCat("must be in [", lo, ", ", hi, "], got ", value));
  }
  return static_cast<int>(value);
}

}  // namespace sluice::runtime::spec_internal
