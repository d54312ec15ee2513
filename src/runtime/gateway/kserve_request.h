// The gateway's view of a KServe v2 inference request body: validation with errors naming the
// field and input ("inputs[0].shape: missing (input 'x')", "inputs[1].data: 5 elements, but
// shape [2,2] holds 4 (input 'y')"), and the request's "id". The gateway forwards the body
// text unchanged inside a batch, so everything it accepts here is what the instance receives. Used by GatewayDaemon
// (gateway_core.cc, gateway_pipeline.cc). Thread-safe: pure functions.
#ifndef SLUICE_RUNTIME_GATEWAY_KSERVE_REQUEST_H_
#define SLUICE_RUNTIME_GATEWAY_KSERVE_REQUEST_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "nlohmann/json.hpp"

namespace sluice::runtime {

struct KserveRequestInfo {
  std::optional<std::string> id;  // the body's "id" (a string), echoed in the response
  int64_t elements = 0;           // tensor elements over all inputs
};

// True for the tensor datatypes of the Open Inference Protocol (BOOL, UINT8..UINT64,
// INT8..INT64, FP16, FP32, FP64, BYTES) and Triton's BF16. Case-sensitive, as the spec writes
// them.
bool IsKserveDatatype(absl::string_view datatype);

// Parses `body` and checks it is a KServe v2 request (JSON tensor form):
// - a JSON object; "id", when present, a string; "parameters", when present, an object;
// - "inputs": a non-empty array of objects, each with a string "name" (unique), a known
//   "datatype" (IsKserveDatatype), a "shape" array of integers in [0, 2^63) whose product does
//   not overflow int64, and a "data" array (flat or nested row-major) holding exactly
//   product(shape) elements, each of the datatype's JSON kind: BOOL true/false; BYTES strings;
//   integer types JSON integers within the type's range; FP16/BF16/FP32/FP64 numbers within the
//   type's finite range (|x| <= 65504 for FP16, FLT_MAX for FP32 and BF16);
// - "outputs", when present, an array of objects with a string "name".
// Binary tensor data (the binary_data extension) is not supported: "data" must be present.
// InvalidArgument "field: message" otherwise; an input with a string name is named at the end:
// "inputs[0].datatype: unknown 'FP8' (BOOL, UINT8, ...) (input 'x')".
absl::StatusOr<KserveRequestInfo> ValidateKserveRequest(const std::string& body);

// Sets `response["id"] = id` when the response object lacks an "id".
void EchoRequestId(const std::optional<std::string>& id, nlohmann::json& response);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_GATEWAY_KSERVE_REQUEST_H_
