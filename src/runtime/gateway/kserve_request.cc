// Structural checks only: tensor contents are the function's business (the SDK checks data
// against the shape); the gateway rejects what could never be a KServe v2 request.
#include "runtime/gateway/kserve_request.h"

#include "absl/strings/str_cat.h"

#include "common/status.h"

namespace sluice::runtime {
namespace {

absl::Status FieldError(const std::string& field, absl::string_view message) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", message));
}

absl::Status ValidateInput(const nlohmann::json& input, const std::string& at) {
  if (!input.is_object())
    return FieldError(at, "must be an object");
  for (const char* key : {"name", "datatype"}) {
    auto it = input.find(key);
    if (it == input.end())
      return FieldError(absl::StrCat(at, ".", key), "missing");
    if (!it->is_string())
      return FieldError(absl::StrCat(at, ".", key), "must be a string");
  }
  auto shape = input.find("shape");
  if (shape == input.end())
    return FieldError(at + ".shape", "missing");
  if (!shape->is_array())
    return FieldError(at + ".shape", "must be an array of non-negative integers");
  for (size_t d = 0; d < shape->size(); ++d) {
    const nlohmann::json& dim = (*shape)[d];
    if (!dim.is_number_integer() || dim.get<int64_t>() < 0)
      return FieldError(absl::StrCat(at, ".shape[", d, "]"), "must be a non-negative integer");
  }
  auto data = input.find("data");
  if (data == input.end())
    return FieldError(at + ".data", "missing");
  if (!data->is_array())
    return FieldError(at + ".data", "must be an array");
  return absl::OkStatus();
}

}  // namespace

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
  auto inputs = doc.find("inputs");
  if (inputs == doc.end())
    return FieldError("inputs", "missing");
  if (!inputs->is_array() || inputs->empty())
    return FieldError("inputs", "must be a non-empty array");
  for (size_t i = 0; i < inputs->size(); ++i)
    SLUICE_RETURN_IF_ERROR(ValidateInput((*inputs)[i], absl::StrCat("inputs[", i, "]")));
  return info;
}

void EchoRequestId(const std::optional<std::string>& id, nlohmann::json& response) {
  if (id.has_value() && response.is_object() && !response.contains("id"))
    response["id"] = *id;
}

}  // namespace sluice::runtime
