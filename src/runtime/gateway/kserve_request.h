// The gateway's view of a KServe v2 inference request body: structural validation with errors
// naming the field ("inputs[0].shape: missing"), and the request's "id". The gateway forwards the
// body text unchanged inside a batch. Used by GatewayDaemon. Thread-safe: pure functions.
#ifndef SLUICE_RUNTIME_GATEWAY_KSERVE_REQUEST_H_
#define SLUICE_RUNTIME_GATEWAY_KSERVE_REQUEST_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"

#include "nlohmann/json.hpp"

namespace sluice::runtime {

struct KserveRequestInfo {
  std::optional<std::string> id;  // the body's "id" (a string), echoed in the response
};

// Parses `body` and checks it is a KServe v2 request: a JSON object with a non-empty "inputs"
// array whose elements are objects with a string "name", a "shape" array of non-negative
// integers, a string "datatype" and a "data" array. InvalidArgument naming the field otherwise
// (e.g. "body: not JSON: ...", "inputs: missing", "inputs[0].shape: missing",
// "inputs[1].shape[0]: must be a non-negative integer", "id: must be a string").
absl::StatusOr<KserveRequestInfo> ValidateKserveRequest(const std::string& body);

// Sets `response["id"] = id` when the response object lacks an "id".
void EchoRequestId(const std::optional<std::string>& id, nlohmann::json& response);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_GATEWAY_KSERVE_REQUEST_H_
