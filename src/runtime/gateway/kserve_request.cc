// Structural and tensor checks: a request the gateway accepts has a known datatype, a shape
// whose element count fits int64 and matches its data, and data of the datatype's JSON kind.
// The walk over "data" is iterative (a deeply nested body cannot overflow the stack).
#include "runtime/gateway/kserve_request.h"

#include <cfloat>
#include <cmath>
#include <limits>
#include <set>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "common/status.h"

namespace sluice::runtime {
namespace {

enum class Kind { kBool, kBytes, kInt, kUint, kFloat };

struct Datatype {
  const char* name;
  Kind kind;
  int64_t lo = 0;          // kInt/kUint: the smallest value
  uint64_t hi = 0;         // kInt/kUint: the largest value
  double max_abs = 0;      // kFloat: the largest finite magnitude
};

constexpr Datatype kDatatypes[] = {
    {"BOOL", Kind::kBool},
    {"UINT8", Kind::kUint, 0, UINT8_MAX},
    {"UINT16", Kind::kUint, 0, UINT16_MAX},
    {"UINT32", Kind::kUint, 0, UINT32_MAX},
    {"UINT64", Kind::kUint, 0, UINT64_MAX},
    {"INT8", Kind::kInt, INT8_MIN, INT8_MAX},
    {"INT16", Kind::kInt, INT16_MIN, INT16_MAX},
    {"INT32", Kind::kInt, INT32_MIN, INT32_MAX},
    {"INT64", Kind::kInt, INT64_MIN, INT64_MAX},
    {"FP16", Kind::kFloat, 0, 0, 65504.0},
    {"BF16", Kind::kFloat, 0, 0, FLT_MAX},  // BF16's range is FP32's (8 exponent bits)
    {"FP32", Kind::kFloat, 0, 0, FLT_MAX},
    {"FP64", Kind::kFloat, 0, 0, DBL_MAX},
    {"BYTES", Kind::kBytes},
};

const Datatype* FindDatatype(absl::string_view name) {
  for (const Datatype& d : kDatatypes) {
    if (name == d.name)
      return &d;
  }
  return nullptr;
}

std::string DatatypeList() {
  std::vector<std::string> names;
  for (const Datatype& d : kDatatypes)
    names.push_back(d.name);
  return absl::StrJoin(names, ", ");
}

absl::Status FieldError(const std::string& field, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", message));
}

// Empty when `v` is a valid element of `type`, else what is wrong with it.
std::string ElementProblem(const nlohmann::json& v, const Datatype& type) {
  switch (type.kind) {
    case Kind::kBool:
      return v.is_boolean() ? "" : "must be true or false (BOOL)";
    case Kind::kBytes:
      return v.is_string() ? "" : "must be a string (BYTES)";
    case Kind::kFloat:
      if (!v.is_number())
        return absl::StrCat("must be a number (", type.name, ")");
      if (!std::isfinite(v.get<double>()) || std::fabs(v.get<double>()) > type.max_abs)
        return absl::StrCat(v.dump(), " is outside the finite range of ", type.name);
      return "";
    case Kind::kInt:
    case Kind::kUint:
      break;
  }
  if (!v.is_number_integer())
    return absl::StrCat("must be an integer (", type.name, ")");
  // nlohmann keeps non-negative integers unsigned and negative ones signed.
  const bool in_range = v.is_number_unsigned()
                            ? v.get<uint64_t>() <= type.hi
                            : v.get<int64_t>() >= type.lo &&
                                  (v.get<int64_t>() < 0 ||
                                   static_cast<uint64_t>(v.get<int64_t>()) <= type.hi);
  return in_range ? "" : absl::StrCat(v.dump(), " is outside the range of ", type.name);
}

// The element count of `shape` (checked: integers in [0, 2^63), product within int64).
absl::StatusOr<int64_t> ElementCount(const nlohmann::json& shape, const std::string& at) {
  if (!shape.is_array())
    return FieldError(at + ".shape", "must be an array of non-negative integers");
  int64_t count = 1;
  bool overflow = false, zero = false;
  for (size_t d = 0; d < shape.size(); ++d) {
    const nlohmann::json& dim = shape[d];
    const std::string field = absl::StrCat(at, ".shape[", d, "]");
    if (!dim.is_number_integer())
      return FieldError(field, "must be a non-negative integer");
    if (dim.is_number_unsigned() && dim.get<uint64_t>() > uint64_t{INT64_MAX})
      return FieldError(field, absl::StrCat(dim.dump(), " does not fit int64"));
    if (dim.get<int64_t>() < 0)
      return FieldError(field, absl::StrCat("must be a non-negative integer, not ", dim.dump()));
    zero = zero || dim.get<int64_t>() == 0;
    overflow = overflow || __builtin_mul_overflow(count, dim.get<int64_t>(), &count);
  }
  if (zero)
    return 0;  // an empty tensor, however large its other dimensions
  if (overflow)
    return FieldError(at + ".shape",
                      absl::StrCat("element count of ", shape.dump(), " overflows int64"));
  return count;
}

// Checks every leaf of `data` (nested arrays are flattened row-major) against `type` and returns
// how many there are.
absl::StatusOr<int64_t> CheckData(const nlohmann::json& data, const Datatype& type,
                                  const std::string& at) {
  int64_t leaves = 0;
  std::vector<std::pair<const nlohmann::json*, size_t>> stack = {{&data, 0}};
  while (!stack.empty()) {
    auto& [array, next] = stack.back();
    if (next == array->size()) {
      stack.pop_back();
      continue;
    }
    const nlohmann::json& v = (*array)[next++];
    if (v.is_array()) {
      stack.emplace_back(&v, 0);
      continue;
    }
    if (const std::string problem = ElementProblem(v, type); !problem.empty())
      return FieldError(absl::StrCat(at, ".data[", leaves, "]"), problem);
    ++leaves;
  }
  return leaves;
}

absl::StatusOr<const Datatype*> InputDatatype(const nlohmann::json& input, const std::string& at) {
  auto datatype = input.find("datatype");
  if (datatype == input.end())
    return FieldError(at + ".datatype", "missing");
  if (!datatype->is_string())
    return FieldError(at + ".datatype", "must be a string");
  const Datatype* type = FindDatatype(datatype->get<std::string>());
  if (type == nullptr) {
    return FieldError(at + ".datatype", absl::StrCat("unknown '", datatype->get<std::string>(),
                                                     "' (", DatatypeList(), ")"));
  }
  return type;
}

// Errors name the field by position ("inputs[i].shape[0]"); ValidateInput adds the input's name.
absl::Status CheckInput(const nlohmann::json& input, size_t i, std::set<std::string>& names,
                        int64_t& elements) {
  const std::string at = absl::StrCat("inputs[", i, "]");
  if (!input.is_object())
    return FieldError(at, "must be an object");
  auto name = input.find("name");
  if (name == input.end())
    return FieldError(at + ".name", "missing");
  if (!name->is_string())
    return FieldError(at + ".name", "must be a string");
  if (!names.insert(name->get<std::string>()).second)
    return FieldError(at + ".name", "duplicate");
  SLUICE_ASSIGN_OR_RETURN(const Datatype* type, InputDatatype(input, at));
  auto shape = input.find("shape");
  if (shape == input.end())
    return FieldError(at + ".shape", "missing");
  SLUICE_ASSIGN_OR_RETURN(const int64_t count, ElementCount(*shape, at));
  auto data = input.find("data");
  if (data == input.end())
    return FieldError(at + ".data", "missing (binary tensor data is not supported)");
  if (!data->is_array())
    return FieldError(at + ".data", "must be an array");
  SLUICE_ASSIGN_OR_RETURN(const int64_t leaves, CheckData(*data, *type, at));
  if (leaves != count) {
    return FieldError(at + ".data", absl::StrCat(leaves, " elements, but shape ", shape->dump(),
                                                 " holds ", count));
  }
  elements += count;
  return absl::OkStatus();
}

absl::Status ValidateInput(const nlohmann::json& input, size_t i, std::set<std::string>& names,
                           int64_t& elements) {
  absl::Status s = CheckInput(input, i, names, elements);
  if (s.ok() || !input.is_object() || !input.contains("name") || !input["name"].is_string())
    return s;
  return absl::Status(s.code(), absl::StrCat(s.message(), " (input '",
                                             input["name"].get<std::string>(), "')"));
}

absl::Status ValidateOutputs(const nlohmann::json& doc) {
  auto outputs = doc.find("outputs");
  if (outputs == doc.end())
    return absl::OkStatus();
  if (!outputs->is_array())
    return FieldError("outputs", "must be an array");
  for (size_t i = 0; i < outputs->size(); ++i) {
    const nlohmann::json& o = (*outputs)[i];
    const std::string at = absl::StrCat("outputs[", i, "]");
    if (!o.is_object())
      return FieldError(at, "must be an object");
    if (!o.contains("name") || !o["name"].is_string())
      return FieldError(at + ".name", o.contains("name") ? "must be a string" : "missing");
  }
  return absl::OkStatus();
}

}  // namespace

bool IsKserveDatatype(absl::string_view datatype) {
  return FindDatatype(datatype) != nullptr;
}

absl::StatusOr<KserveRequestInfo> ValidateKserveRequest(const std::string& body) {
  nlohmann::json doc = nlohmann::json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded())
    return FieldError("body", "not valid JSON");
  if (!doc.is_object())
    return FieldError("body", "must be a JSON object");
  KserveRequestInfo info;
  if (auto id = doc.find("id"); id != doc.end()) {
    if (!id->is_string())
      return FieldError("id", "must be a string");
    info.id = id->get<std::string>();
  }
  if (auto p = doc.find("parameters"); p != doc.end() && !p->is_object())
    return FieldError("parameters", "must be an object");
  auto inputs = doc.find("inputs");
  if (inputs == doc.end())
    return FieldError("inputs", "missing");
  if (!inputs->is_array() || inputs->empty())
    return FieldError("inputs", "must be a non-empty array");
  std::set<std::string> names;
  for (size_t i = 0; i < inputs->size(); ++i)
    SLUICE_RETURN_IF_ERROR(ValidateInput((*inputs)[i], i, names, info.elements));
  SLUICE_RETURN_IF_ERROR(ValidateOutputs(doc));
  return info;
}

void EchoRequestId(const std::optional<std::string>& id, nlohmann::json& response) {
  if (id.has_value() && response.is_object() && !response.contains("id"))
    response["id"] = *id;
}

}  // namespace sluice::runtime
