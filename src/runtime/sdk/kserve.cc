// KServe v2 parsing: nlohmann::json's own exceptions are caught here, at the boundary (the
// parse call uses the non-throwing overload; accessors are guarded by type checks).
#include "runtime/sdk/kserve.h"

#include "absl/strings/str_cat.h"

#include "common/status.h"

namespace sluice::runtime {
namespace {

using nlohmann::json;

// Appends every number of `data` (flat or nested arrays) to `out`; false on a non-number.
bool Flatten(const json& data, std::vector<float>* out) {
  if (data.is_array()) {
    for (const json& d : data) {
      if (!Flatten(d, out)) {
        return false;
      }
    }
    return true;
  }
  if (!data.is_number()) {
    return false;
  }
  out->push_back(data.get<float>());
  return true;
}

// Counts the leaves of `data`; -1 when one is neither a number, a bool nor a string.
int64_t CountLeaves(const json& data) {
  if (!data.is_array()) {
    return data.is_number() || data.is_boolean() || data.is_string() ? 1 : -1;
  }
  int64_t n = 0;
  for (const json& d : data) {
    const int64_t c = CountLeaves(d);
    if (c < 0) {
      return -1;
    }
    n += c;
  }
  return n;
}

absl::Status ValidateTensor(const json& t, const std::string& field) {
  if (!t.is_object()) {
    return absl::InvalidArgumentError(field + ": must be an object");
  }
  if (!t.contains("name") || !t["name"].is_string()) {
    return absl::InvalidArgumentError(field + ".name: must be a string");
  }
  if (!t.contains("datatype") || !t["datatype"].is_string()) {
    return absl::InvalidArgumentError(field + ".datatype: must be a string");
  }
  if (!t.contains("shape") || !t["shape"].is_array()) {
    return absl::InvalidArgumentError(field + ".shape: must be an array of integers");
  }
  int64_t elements = 1;
  for (const json& d : t["shape"]) {
    if (!d.is_number_integer() || d.get<int64_t>() < 0) {
      return absl::InvalidArgumentError(field + ".shape: must be non-negative integers");
    }
    elements *= d.get<int64_t>();
  }
  if (!t.contains("data") || !t["data"].is_array()) {
    return absl::InvalidArgumentError(field + ".data: must be an array");
  }
  const int64_t leaves = CountLeaves(t["data"]);
  if (leaves < 0) {
    return absl::InvalidArgumentError(field + ".data: must hold scalars");
  }
  if (leaves != elements) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ".data: has ", leaves, " elements, shape says ", elements));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateInferRequest(const json& body) {
  if (!body.is_object()) {
    return absl::InvalidArgumentError("request: must be a JSON object");
  }
  if (body.contains("id") && !body["id"].is_string()) {
    return absl::InvalidArgumentError("id: must be a string");
  }
  if (!body.contains("inputs") || !body["inputs"].is_array() || body["inputs"].empty()) {
    return absl::InvalidArgumentError("inputs: must be a non-empty array");
  }
  for (size_t i = 0; i < body["inputs"].size(); ++i) {
    SLUICE_RETURN_IF_ERROR(ValidateTensor(body["inputs"][i], absl::StrCat("inputs[", i, "]")));
  }
  return absl::OkStatus();
}

absl::StatusOr<InferRequest> MakeInferRequest(json body) {
  SLUICE_RETURN_IF_ERROR(ValidateInferRequest(body));
  InferRequest r;
  if (body.contains("id")) {
    r.id = body["id"].get<std::string>();
  }
  r.body = std::move(body);
  return r;
}

absl::StatusOr<InferRequest> ParseInferRequest(const std::string& text) {
  json body = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded()) {
    return absl::InvalidArgumentError("request: body is not valid JSON");
  }
  return MakeInferRequest(std::move(body));
}

absl::StatusOr<FloatTensor> InputAsFloats(const InferRequest& request, const std::string& name) {
  const json* found = nullptr;
  if (request.body.contains("inputs") && request.body["inputs"].is_array()) {
    for (const json& t : request.body["inputs"]) {
      if (name.empty() || (t.contains("name") && t["name"] == name)) {
        found = &t;
        break;
      }
    }
  }
  if (found == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("inputs: no input named '", name, "'"));
  }
  FloatTensor out;
  for (const json& d : (*found)["shape"]) {
    out.shape.push_back(d.get<int64_t>());
  }
  if (!Flatten((*found)["data"], &out.values)) {
    return absl::InvalidArgumentError(
        absl::StrCat("inputs '", (*found)["name"].get<std::string>(), "'.data: must be numbers"));
  }
  return out;
}

json Fp32Output(const std::string& name, std::vector<int64_t> shape,
                const std::vector<float>& values) {
  return {{"name", name}, {"shape", std::move(shape)}, {"datatype", "FP32"}, {"data", values}};
}

json Int64Output(const std::string& name, std::vector<int64_t> shape,
                 const std::vector<int64_t>& values) {
  return {{"name", name}, {"shape", std::move(shape)}, {"datatype", "INT64"}, {"data", values}};
}

json InferResponse(const std::string& model_name, const std::string& id, json outputs) {
  json r = {{"model_name", model_name}, {"outputs", std::move(outputs)}};
  if (!id.empty()) {
    r["id"] = id;
  }
  return r;
}

}  // namespace sluice::runtime
