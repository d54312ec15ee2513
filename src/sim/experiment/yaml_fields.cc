// StrictMap and the number checks. Only the non-throwing parts of yaml-cpp are used here
// (iteration, Type(), Scalar(), convert<T>::decode, Mark() on valid nodes).
#include "sim/experiment/yaml_fields.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"

namespace sluice::sim {

int YamlLine(const YAML::Node& node) {
  if (!node.IsDefined()) return 0;
  const YAML::Mark mark = node.Mark();
  return mark.is_null() || mark.line < 0 ? 0 : mark.line + 1;
}

absl::Status YamlError(const std::string& file, const YAML::Node& node, absl::string_view field,
                       absl::string_view message) {
  return common::InputError({file, YamlLine(node)}, field, message);
}

std::string JoinField(absl::string_view parent, absl::string_view key) {
  if (parent.empty()) return std::string(key);
  return absl::StrCat(parent, ".", key);
}

absl::Status CheckRange(double value, Range range, const std::string& file,
                        const YAML::Node& node, absl::string_view field) {
  if (!std::isfinite(value)) return YamlError(file, node, field, "must be a finite number");
  switch (range) {
    case Range::kAny:
      return absl::OkStatus();
    case Range::kPositive:
      if (value > 0) return absl::OkStatus();
      return YamlError(file, node, field, absl::StrCat("must be > 0, got ", value));
    case Range::kNonNegative:
      if (value >= 0) return absl::OkStatus();
      return YamlError(file, node, field, absl::StrCat("must be >= 0, got ", value));
    case Range::kFraction:
      if (value > 0 && value <= 1) return absl::OkStatus();
      return YamlError(file, node, field, absl::StrCat("must be in (0, 1], got ", value));
  }
  return absl::OkStatus();
}

absl::StatusOr<StrictMap> StrictMap::Create(const YAML::Node& node, const std::string& file,
                                            std::string field,
                                            std::initializer_list<absl::string_view> allowed) {
  const std::string shown = field.empty() ? "<top level>" : field;
  if (!node.IsMap()) return YamlError(file, node, shown, "must be a map of key: value");
  StrictMap map(node, file, std::move(field));
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) return YamlError(file, kv.first, shown, "keys must be plain names");
    std::string key = kv.first.Scalar();
    bool known = false;
    for (absl::string_view a : allowed) known = known || a == key;
    if (!known) {
      return YamlError(file, kv.first, map.FieldOf(key),
                       absl::StrCat("unknown field (allowed: ", absl::StrJoin(allowed, ", "), ")"));
    }
    if (map.Find(key) != nullptr) {
      return YamlError(file, kv.first, map.FieldOf(key), "duplicate field");
    }
    map.entries_.push_back({std::move(key), kv.first, kv.second});
  }
  return map;
}

const StrictMap::Entry* StrictMap::Find(absl::string_view key) const {
  for (const Entry& e : entries_) {
    if (e.key == key) return &e;
  }
  return nullptr;
}

bool StrictMap::Has(absl::string_view key) const { return Find(key) != nullptr; }

YAML::Node StrictMap::Get(absl::string_view key) const {
  const Entry* e = Find(key);
  return e == nullptr ? YAML::Node() : e->value;
}

std::vector<std::string> StrictMap::Keys() const {
  std::vector<std::string> keys;
  keys.reserve(entries_.size());
  for (const Entry& e : entries_) keys.push_back(e.key);
  return keys;
}

absl::Status StrictMap::ErrorAt(absl::string_view key, absl::string_view message) const {
  const Entry* e = Find(key);
  return YamlError(*file_, e == nullptr ? node_ : e->value, FieldOf(key), message);
}

absl::StatusOr<const StrictMap::Entry*> StrictMap::Scalar(absl::string_view key) const {
  const Entry* e = Find(key);
  if (e == nullptr) return nullptr;
  // yaml-cpp places an empty value at the next token, often the next line: point at the key.
  if (e->value.IsNull()) return YamlError(*file_, e->key_node, FieldOf(key), "has no value");
  if (!e->value.IsScalar()) return ErrorAt(key, "must be a single value, not a list or map");
  return e;
}

absl::StatusOr<double> StrictMap::Double(absl::string_view key, Range range,
                                         std::optional<double> fallback) const {
  SLUICE_ASSIGN_OR_RETURN(const Entry* e, Scalar(key));
  if (e == nullptr) {
    if (fallback.has_value()) return *fallback;
    return ErrorAt(key, "required field is missing");
  }
  double v = 0;
  if (!YAML::convert<double>::decode(e->value, v)) {
    return ErrorAt(key, absl::StrCat("must be a number, got '", e->value.Scalar(), "'"));
  }
  SLUICE_RETURN_IF_ERROR(CheckRange(v, range, *file_, e->value, FieldOf(key)));
  return v;
}

absl::StatusOr<int64_t> StrictMap::Int(absl::string_view key, Range range,
                                       std::optional<int64_t> fallback) const {
  SLUICE_ASSIGN_OR_RETURN(const Entry* e, Scalar(key));
  if (e == nullptr) {
    if (fallback.has_value()) return *fallback;
    return ErrorAt(key, "required field is missing");
  }
  long long v = 0;  // NOLINT(runtime/int): yaml-cpp's converter type
  if (!YAML::convert<long long>::decode(e->value, v)) {  // NOLINT(runtime/int)
    return ErrorAt(key, absl::StrCat("must be an integer, got '", e->value.Scalar(), "'"));
  }
  SLUICE_RETURN_IF_ERROR(
      CheckRange(static_cast<double>(v), range, *file_, e->value, FieldOf(key)));
  return static_cast<int64_t>(v);
}

absl::StatusOr<bool> StrictMap::Bool(absl::string_view key, std::optional<bool> fallback) const {
  SLUICE_ASSIGN_OR_RETURN(const Entry* e, Scalar(key));
  if (e == nullptr) {
    if (fallback.has_value()) return *fallback;
    return ErrorAt(key, "required field is missing");
  }
  bool v = false;
  if (!YAML::convert<bool>::decode(e->value, v)) {
    return ErrorAt(key, absl::StrCat("must be true or false, got '", e->value.Scalar(), "'"));
  }
  return v;
}

absl::StatusOr<std::string> StrictMap::String(absl::string_view key,
                                              std::optional<std::string> fallback) const {
  SLUICE_ASSIGN_OR_RETURN(const Entry* e, Scalar(key));
  if (e == nullptr) {
    if (fallback.has_value()) return *std::move(fallback);
    return ErrorAt(key, "required field is missing");
  }
  if (e->value.Scalar().empty()) return ErrorAt(key, "must not be empty");
  return e->value.Scalar();
}

absl::StatusOr<std::string> StrictMap::Name(absl::string_view key,
                                            std::optional<std::string> fallback) const {
  SLUICE_ASSIGN_OR_RETURN(std::string name, String(key, std::move(fallback)));
  if (!IsValidName(name)) {
    return ErrorAt(key, absl::StrCat("'", name, "' is not a valid name (1-64 characters of ",
                                     "A-Z a-z 0-9 . _ - +, starting with a letter or digit)"));
  }
  return name;
}

bool IsValidName(absl::string_view name) {
  if (name.empty() || name.size() > 64 || !absl::ascii_isalnum(name[0])) return false;
  for (char c : name) {
    if (!absl::ascii_isalnum(c) && c != '.' && c != '_' && c != '-' && c != '+') return false;
  }
  return true;
}

absl::StatusOr<std::string> ReadExperimentFile(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return common::InputError({path, 0}, "", "is a directory, not an experiment file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return common::InputError({path, 0}, "", "cannot open the experiment file");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    return common::InputError({path, 0}, "", "cannot read the experiment file");
  return text.str();
}

}  // namespace sluice::sim
