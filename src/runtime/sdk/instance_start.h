// The instance side of fast cold starts (docs/platform.md "Cold starts"): the agent's process
// pool (a pre-started runtime waits on SLUICE_POOL_SOCKET for the instance it becomes), the
// function's parameters from the node's host-memory store (SLUICE_PARAMS_SOCKET/_MODEL: the
// store's sealed chunk fds, read with pread, no storage read) or from its model file, and the
// start record of this process's stages, served under "start" by GET /sluice/v1/stats.
// Used by RunFunction and by functions' load callbacks. Thread safety: the record is guarded by
// a mutex; WaitForAssignment must run before any other thread reads the environment.
#ifndef SLUICE_RUNTIME_SDK_INSTANCE_START_H_
#define SLUICE_RUNTIME_SDK_INSTANCE_START_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace sluice::runtime {

// The stages of this process's (latest) start, in milliseconds; negative = did not happen.
struct StartRecord {
  bool pooled = false;        // started as a pre-started pool process
  double prestart_ms = -1;    // pool: runtime initialisation before waiting (off the critical path)
  double waited_ms = -1;      // pool: idle wait for the assignment (off the critical path)
  double handoff_ms = -1;     // pool: connection accepted -> environment applied
  std::string params_source = "none";  // "host-cache" | "disk" | "none"
  int64_t params_bytes = 0;
  double params_ms = -1;      // parameters read into process memory
  double load_ms = -1;        // the function's load(): model to the device, warm-up batch
  double ready_ms = -1;       // assignment (or process start) -> ready
};

// A copy of the record, and the record as JSON ({"pooled", "prestart_ms", ...}).
StartRecord CurrentStartRecord();
nlohmann::json StartRecordJson();
void UpdateStartRecord(const std::function<void(StartRecord&)>& update);

// Pool mode: listens on `socket_path`, accepts the agent's one connection, reads the assignment
// ({"env": [[name, value], ...]} then EOF), sets each variable over the process environment and
// unsets SLUICE_POOL_SOCKET. Until then the process asks to be killed with its parent (the
// agent); after it, it outlives the agent like any instance. Internal/InvalidArgument when the
// socket or the message is bad.
absl::Status WaitForAssignment(const std::string& socket_path);

// The function's parameters, read now: from the node's store when the agent gave
// SLUICE_PARAMS_SOCKET and SLUICE_PARAMS_MODEL (source "host-cache"), else the file at
// $SLUICE_MODEL_PATH when it is a regular file (source "disk"), else "" (source "none").
// Records the source, size and time. Errors name the socket, model or path.
absl::StatusOr<std::string> ReadInstanceParameters();

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_SDK_INSTANCE_START_H_
