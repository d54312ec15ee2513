// Client side of the token-server socket for the node agent and tests: a live instance-spec
// update (control_protocol.h) and a bare hello (what libsluice_cuda.so sends, for tests and
// tools that register without the interception library). Blocking calls with a timeout.
// Thread-compatible: stateless functions.
#ifndef SLUICE_RUNTIME_AGENT_AGENT_CLIENT_H_
#define SLUICE_RUNTIME_AGENT_AGENT_CLIENT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "intercept/protocol.h"
#include "runtime/agent/token_server.h"

namespace sluice::runtime {

// Asks the server on `socket_path` to set `instance`'s spec on GPU `gpu_uuid`. OK when acked;
// PermissionDenied / InvalidArgument / NotFound / FailedPrecondition (version) from the ack,
// Unavailable when the socket fails.
absl::Status SendInstanceUpdate(const std::string& socket_path, const std::string& gpu_uuid,
                                common::InstanceId instance, const InstanceSpec& spec,
                                absl::Duration timeout = absl::Seconds(5));

// A hello's outcome. On a welcome `fd` stays open (closing it retires the slot); else -1.
struct HelloReply {
  bool welcomed = false;
  SluiceWelcome welcome{};
  SluiceReject reject{};
  int fd = -1;
};

// A hello for `gpu_uuid` with this library's protocol version and the given fields.
SluiceHello MakeHello(const std::string& gpu_uuid, int64_t instance_id, int32_t requested_slot);
// Connects to `socket_path`, sends `hello` and waits for the answer.
absl::StatusOr<HelloReply> SendHello(const std::string& socket_path, const SluiceHello& hello,
                                     absl::Duration timeout = absl::Seconds(5));

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_AGENT_AGENT_CLIENT_H_
