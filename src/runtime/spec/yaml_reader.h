// Strict typed field access over plain yaml-cpp nodes for the function-spec parser: every
// failure is a common::InputError naming file, line and dotted field. Private to this
// directory (runtime must not depend on src/sim's StrictMap). Thread-safe: no shared state.
// Contract: callers pass only defined nodes; nothing here throws.
#ifndef SLUICE_RUNTIME_SPEC_YAML_READER_H_
#define SLUICE_RUNTIME_SPEC_YAML_READER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "yaml-cpp/yaml.h"

namespace sluice::runtime::spec_internal {

class YamlReader {
 public:
  explicit YamlReader(std::string file) : file_(std::move(file)) {}

  // InvalidArgument "file:<line of node>: field 'field': message".
  [[nodiscard]] absl::Status Error(const YAML::Node& node, const std::string& field,
                                   const std::string& message) const;

  // Checks `node` is a map whose keys are unique scalars from `allowed`.
  [[nodiscard]] absl::Status CheckMap(const YAML::Node& node, const std::string& field,
                                      const std::vector<std::string>& allowed) const;

  // `map[key]`, or an error at the map's line for "prefix.key" when absent or null.
  absl::StatusOr<YAML::Node> Required(const YAML::Node& map, const std::string& prefix,
                                      const std::string& key) const;

  absl::StatusOr<std::string> String(const YAML::Node& node, const std::string& field) const;
  absl::StatusOr<int64_t> Int(const YAML::Node& node, const std::string& field) const;
  // Finite numbers only.
  absl::StatusOr<double> Double(const YAML::Node& node, const std::string& field) const;
  // Int in [lo, hi].
  absl::StatusOr<int> IntIn(const YAML::Node& node, const std::string& field, int64_t lo,
                            int64_t hi) const;

 private:
  std::string file_;
};

// "prefix.key", or "key" when prefix is empty.
std::string Join(const std::string& prefix, const std::string& key);

}  // namespace sluice::runtime::spec_internal

#endif  // SLUICE_RUNTIME_SPEC_YAML_READER_H_
