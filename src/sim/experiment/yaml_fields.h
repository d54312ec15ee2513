// Strict, non-throwing readers over yaml-cpp nodes for the experiment loader. Every accessor
// checks the value's type and range; every error is a common::InputError naming the file, the
// line of the offending node and a dotted field path ("functions[0].quota.request").
// Value types; not thread-safe (yaml-cpp nodes share state).
#ifndef SLUICE_SIM_EXPERIMENT_YAML_FIELDS_H_
#define SLUICE_SIM_EXPERIMENT_YAML_FIELDS_H_

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "yaml-cpp/yaml.h"

namespace sluice::sim {

// 1-based line of `node`, 0 when yaml-cpp knows none.
int YamlLine(const YAML::Node& node);

// InvalidArgument "file:line: field 'field': message" at `node`'s line.
[[nodiscard]] absl::Status YamlError(const std::string& file, const YAML::Node& node,
                                     absl::string_view field, absl::string_view message);

// `parent` + "." + `key`, or `key` when parent is empty.
std::string JoinField(absl::string_view parent, absl::string_view key);

// The range a number must lie in.
enum class Range {
  kAny,
  kPositive,     // > 0
  kNonNegative,  // >= 0
  kFraction,     // (0, 1]
};

// A YAML mapping whose keys were checked against a fixed set: each key appears at most once and
// is one of the allowed names. Lookups never create nodes and never throw. The typed getters take
// a `fallback`: when the key is absent the fallback is returned, or, when it is nullopt, the key
// is reported as required. A key present with an empty value (`key:`) is an error, never the
// fallback. Numbers must be finite.
class StrictMap {
 public:
  // Fails unless `node` is a map whose keys are all in `allowed`. `field` is the map's own path
  // ("" at the top level), used as the prefix of every error.
  static absl::StatusOr<StrictMap> Create(const YAML::Node& node, const std::string& file,
                                          std::string field,
                                          std::initializer_list<absl::string_view> allowed);

  bool Has(absl::string_view key) const;
  // The value node of `key`; a null node when absent (check Has first).
  YAML::Node Get(absl::string_view key) const;
  // The path of `key` for messages and nested readers.
  std::string FieldOf(absl::string_view key) const { return JoinField(field_, key); }
  const std::string& field() const { return field_; }
  const std::string& file() const { return *file_; }
  const YAML::Node& node() const { return node_; }
  // The keys in document order.
  std::vector<std::string> Keys() const;

  absl::StatusOr<double> Double(absl::string_view key, Range range,
                                std::optional<double> fallback) const;
  absl::StatusOr<int64_t> Int(absl::string_view key, Range range,
                              std::optional<int64_t> fallback) const;
  absl::StatusOr<bool> Bool(absl::string_view key, std::optional<bool> fallback) const;
  // A non-empty scalar.
  absl::StatusOr<std::string> String(absl::string_view key,
                                     std::optional<std::string> fallback) const;
  // A String that is a valid name (IsValidName): names end up in file names, CSV headers and
  // space-separated event-log lines.
  absl::StatusOr<std::string> Name(absl::string_view key,
                                   std::optional<std::string> fallback) const;

  // An error at `key`'s value (or at the map itself when the key is absent).
  [[nodiscard]] absl::Status ErrorAt(absl::string_view key, absl::string_view message) const;

 private:
  struct Entry {
    std::string key;
    YAML::Node key_node;
    YAML::Node value;
  };
  StrictMap(YAML::Node node, const std::string& file, std::string field)
      : node_(std::move(node)), file_(&file), field_(std::move(field)) {}
  const Entry* Find(absl::string_view key) const;
  // Returns the entry of a present, non-null scalar key; nullptr when absent.
  absl::StatusOr<const Entry*> Scalar(absl::string_view key) const;

  YAML::Node node_;
  const std::string* file_;  // borrowed: outlives the map (the loader's file name)
  std::string field_;
  std::vector<Entry> entries_;
};

// True when `name` is 1-64 characters of [A-Za-z0-9._+-] and starts with a letter or digit.
bool IsValidName(absl::string_view name);

// Checks a number against `range`; the message names the bound.
[[nodiscard]] absl::Status CheckRange(double value, Range range, const std::string& file,
                                      const YAML::Node& node, absl::string_view field);

// The text of an experiment file; InputError naming the path when it is a directory or cannot be
// opened or read. Shared by every experiment kind's loader.
absl::StatusOr<std::string> ReadExperimentFile(const std::string& path);

// The `policies:` list of an experiment: required, non-empty, each item parsed by
// `parse(item, "policies[i]", file)` (returning absl::StatusOr<P> with a `label`), labels distinct.
template <typename P, typename Parse>
absl::StatusOr<std::vector<P>> ParseLabelledPolicies(const StrictMap& top, Parse parse) {
  if (!top.Has("policies")) return top.ErrorAt("policies", "required field is missing");
  const YAML::Node list = top.Get("policies");
  if (!list.IsSequence() || list.size() == 0) {
    return top.ErrorAt("policies", "must be a non-empty list of policies");
  }
  std::vector<P> policies;
  size_t i = 0;
  for (const YAML::Node& item : list) {
    const std::string field = absl::StrCat("policies[", i++, "]");
    absl::StatusOr<P> p = parse(item, field, top.file());
    if (!p.ok()) return p.status();
    for (const P& q : policies) {
      if (q.label == p->label) {
        return YamlError(top.file(), item, field,
                         absl::StrCat("duplicate policy label '", p->label,
                                      "' (give each entry a distinct label:)"));
      }
    }
    policies.push_back(*std::move(p));
  }
  return policies;
}

}  // namespace sluice::sim

#endif  // SLUICE_SIM_EXPERIMENT_YAML_FIELDS_H_
