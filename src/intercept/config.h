// Config: libsluice_cuda.so's settings, read once from the environment at lazy initialisation.
// Plain data (no libstdc++ runtime); ParseConfig is a pure function of the lookup it is given, so
// tests feed it a table. Invalid values are reported (variable named) and replaced by defaults.
#ifndef SLUICE_INTERCEPT_CONFIG_H_
#define SLUICE_INTERCEPT_CONFIG_H_

#include <cstdint>

namespace sluice::intercept {

// Environment variables (all optional):
//   SLUICE_REAL_LIBCUDA     path of the real driver (default: dlopen("libcuda.so.1"), then search)
//   SLUICE_TOKEN_SOCKET     token server's Unix socket; unset = no launch gating (pass-through
//                           with memory accounting)
//   SLUICE_GPU_UUID         GPU to register for (default: the current context's device UUID)
//   SLUICE_INSTANCE_ID      int64 instance id sent in hello (default -1)
//   SLUICE_MEM_LIMIT_BYTES  device-memory limit in bytes (default 0 = none; the token server's
//                           per-slot limit also applies, the smaller one wins)
//   SLUICE_FAIL_POLICY      open|closed: what gated launches do when the server is gone
//                           (default: the segment's policy, else open)
//   SLUICE_FAIL_TIMEOUT_MS  heartbeat age that means "server gone" (default: segment's, else 100)
//   SLUICE_INTERCEPT_VERBOSE  1 = log every decision of note to stderr
struct Config {
  static constexpr int kPathBytes = 1024;
  char real_libcuda[kPathBytes] = {};  // empty = default search
  char token_socket[108] = {};         // sun_path size; empty = ungated
  char gpu_uuid[64] = {};              // empty = ask the driver
  int64_t instance_id = -1;
  int64_t mem_limit_bytes = 0;   // 0 = unlimited
  int fail_policy = -1;          // SluiceFailPolicy, or -1 = take the segment's
  int64_t fail_timeout_ns = -1;  // -1 = take the segment's
  bool verbose = false;
};

// Looks a variable up; returns nullptr when unset.
using EnvLookup = const char* (*)(const char* name);

// Parses every variable above through `lookup`. For each invalid value, writes a message naming
// the variable to stderr (through `warn` when non-null, for tests) and keeps the default.
// Returns the number of invalid values.
int ParseConfig(EnvLookup lookup, Config* out, void (*warn)(const char* message) = nullptr);

// Strict decimal parse of a whole string into [min, max]; false on anything else.
bool ParseInt64(const char* text, int64_t min, int64_t max, int64_t* out);

}  // namespace sluice::intercept

#endif  // SLUICE_INTERCEPT_CONFIG_H_
