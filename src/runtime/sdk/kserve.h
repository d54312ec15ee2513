// KServe Open Inference Protocol v2 bodies as the function SDK sees them: the parsed request a
// batch handler receives, the result it returns, and helpers to read FP32 input tensors and build
// response tensors. Used by FunctionServer and the example functions. Thread-safe: pure functions.
#ifndef SLUICE_RUNTIME_SDK_KSERVE_H_
#define SLUICE_RUNTIME_SDK_KSERVE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "nlohmann/json.hpp"

namespace sluice::runtime {

// One KServe v2 inference request. `body` has passed ValidateInferRequest: an object whose
// "inputs" is a non-empty array of {name, shape, datatype, data} tensors.
struct InferRequest {
  std::string id;  // the request's "id", or "" when it has none
  nlohmann::json body;
};

// The handler's answer to one request: a KServe v2 response body, or an error text. `code` is
// the HTTP status the single-request endpoint answers with for an error (400: the request was
// bad; 500: the function failed).
struct InferResult {
  nlohmann::json body;
  std::string error;
  int code = 200;

  bool ok() const { return error.empty(); }
  static InferResult Ok(nlohmann::json body) { return {std::move(body), "", 200}; }
  static InferResult Error(std::string message, int code = 400) {
    return {nlohmann::json(), std::move(message), code};
  }
};

// A dense tensor of one input, flattened row-major.
struct FloatTensor {
  std::vector<int64_t> shape;
  std::vector<float> values;
};

// Checks the structure of a KServe v2 request body. InvalidArgument naming the field
// ("inputs[0].shape: ...") when it is not an object, lacks a non-empty "inputs" array, or an
// input lacks a string name/datatype, a shape of non-negative integers, or data (flat or nested
// array) with as many numbers as the shape's product.
absl::Status ValidateInferRequest(const nlohmann::json& body);

// Parses and validates `text`; InvalidArgument for JSON syntax errors too.
absl::StatusOr<InferRequest> ParseInferRequest(const std::string& text);
// Validates an already parsed body.
absl::StatusOr<InferRequest> MakeInferRequest(nlohmann::json body);

// The input called `name` (or the first input when `name` is empty) as FP32 values; integer
// data is converted. InvalidArgument when absent or not numeric.
absl::StatusOr<FloatTensor> InputAsFloats(const InferRequest& request, const std::string& name);

// {"name", "shape", "datatype": "FP32"|"INT64", "data"} output tensors.
nlohmann::json Fp32Output(const std::string& name, std::vector<int64_t> shape,
                          const std::vector<float>& values);
nlohmann::json Int64Output(const std::string& name, std::vector<int64_t> shape,
                           const std::vector<int64_t>& values);

// {"model_name", "id" (when non-empty), "outputs"}.
nlohmann::json InferResponse(const std::string& model_name, const std::string& id,
                             nlohmann::json outputs);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_SDK_KSERVE_H_
