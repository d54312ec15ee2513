// Token-server registration for libsluice_cuda.so: the hello/welcome handshake over the Unix
// socket (protocol.h) and the mapping of the GPU's shared segment. Called from the gate's
// initialisation and, rate-limited, when the server seems gone; never on a launch fast path.
// Thread-compatible: callers serialise Register() calls.
#ifndef SLUICE_INTERCEPT_TOKEN_CLIENT_H_
#define SLUICE_INTERCEPT_TOKEN_CLIENT_H_

#include <cstddef>
#include <cstdint>

#include "intercept/protocol.h"

namespace sluice::intercept {

// One successful registration. Immutable once published; never freed (the segment may still be
// read by threads that loaded the pointer), so at most a handful exist per process.
struct Registration {
  SluiceShmHeader* header = nullptr;
  SluiceSlot* slot = nullptr;
  uint32_t slot_index = 0;
  uint32_t generation = 0;
  uint16_t version_minor = 0;  // negotiated
  int socket_fd = -1;          // kept open for the process lifetime: EOF retires the slot
};

struct RegisterRequest {
  const char* socket_path;
  const char* gpu_uuid;
  int64_t instance_id;
  int32_t requested_slot;  // -1 = any
  int64_t timeout_ns;      // per socket operation
};

// Connects, says hello, waits for welcome/reject and maps the segment. On failure returns false
// and a human-readable reason in `error` (always NUL-terminated).
bool Register(const RegisterRequest& request, Registration* out, char* error, size_t error_bytes);

// Formats 16 UUID bytes as nvidia-smi does: "GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx".
void FormatGpuUuid(const unsigned char bytes[16], char out[SLUICE_UUID_BYTES]);

// Validates a mapped segment header against this library's protocol; false with a reason.
bool CheckSegment(const SluiceShmHeader* header, size_t mapped_bytes, uint32_t slot_index,
                  char* error, size_t error_bytes);

// CLOCK_MONOTONIC in nanoseconds (the protocol's clock).
int64_t MonotonicNowNs();

}  // namespace sluice::intercept

#endif  // SLUICE_INTERCEPT_TOKEN_CLIENT_H_
