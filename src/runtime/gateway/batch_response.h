// Splits an instance's batch answer ({"responses": [r0, r1, ...], ...}, docs/platform.md) into
// the raw text of each response without building a JSON DOM (the gateway's hot path), and marks
// which responses are per-request errors ({"error": ...}) and which carry an "id". Used by
// GatewayCore. Thread-safe: pure functions.
#ifndef SLUICE_RUNTIME_GATEWAY_BATCH_RESPONSE_H_
#define SLUICE_RUNTIME_GATEWAY_BATCH_RESPONSE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace sluice::runtime {

struct BatchItem {
  absl::string_view text;  // the response's JSON text, a view into the body
  bool is_object = false;
  bool has_error = false;  // a top-level "error" key
  bool has_id = false;     // a top-level "id" key
};

// The elements of the body's top-level "responses" array. The scan checks the structure
// (objects, arrays, strings with escapes, balanced brackets) but not the spelling of scalars:
// instances are ours (the SDK writes with nlohmann-json). InvalidArgument when the body is not an
// object with a "responses" array.
absl::StatusOr<std::vector<BatchItem>> SplitBatchResponse(absl::string_view body);

// `item.text` with "id": `id` added as its first key when it is an object without an "id".
std::string WithRequestId(const BatchItem& item, const std::optional<std::string>& id);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_GATEWAY_BATCH_RESPONSE_H_
