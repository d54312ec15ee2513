// A strict parser for the subset of Python literals that Dilu's instance lists use (one dict
// literal per line, as printed by Python's repr): strings in single or double quotes, integers,
// floats, lists and dicts with string keys. Used by instance_list.cc. Pure; thread-safe.
#ifndef SLUICE_SIM_PLACEMENT_PY_LITERAL_H_
#define SLUICE_SIM_PLACEMENT_PY_LITERAL_H_

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sluice::sim {

struct PyValue;

// A dict with string keys, in source order. Keys are unique (the parser rejects repeats).
struct PyDict {
  std::vector<std::string> keys;
  std::vector<PyValue> values;

  // The value of `key`, or nullptr.
  const PyValue* Find(absl::string_view key) const;
};

using PyList = std::vector<PyValue>;

struct PyValue {
  std::variant<std::string, int64_t, double, PyList, PyDict> value;

  bool is_string() const { return std::holds_alternative<std::string>(value); }
  bool is_int() const { return std::holds_alternative<int64_t>(value); }
  bool is_float() const { return std::holds_alternative<double>(value); }
  bool is_number() const { return is_int() || is_float(); }
  bool is_list() const { return std::holds_alternative<PyList>(value); }
  bool is_dict() const { return std::holds_alternative<PyDict>(value); }
  // Preconditions: the matching is_*() is true (AsNumber: is_number()).
  const std::string& AsString() const { return std::get<std::string>(value); }
  int64_t AsInt() const { return std::get<int64_t>(value); }
  double AsNumber() const;
  const PyList& AsList() const { return std::get<PyList>(value); }
  const PyDict& AsDict() const { return std::get<PyDict>(value); }
  // "string", "int", "float", "list" or "dict", for error messages.
  const char* TypeName() const;
};

// Parses exactly one literal filling `text` (surrounding whitespace allowed). Accepted: 'str' and
// "str" with the escapes \\ \' \" \n \t; integers (optional sign, fitting int64); floats with a
// fraction and/or exponent (finite); [a, b] and {'k': v} with an optional trailing comma; nesting
// up to 32 levels. Rejected, with InvalidArgument "column C: message" (1-based byte column):
// anything else (True/False/None, tuples, sets, non-string or repeated dict keys, bytes/f-strings,
// trailing text).
absl::StatusOr<PyValue> ParsePyLiteral(absl::string_view text);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_PLACEMENT_PY_LITERAL_H_
