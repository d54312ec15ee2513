// Environment parsing for libsluice_cuda.so. No allocation: fixed buffers, snprintf messages.
#include "intercept/config.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "intercept/log.h"
#include "intercept/protocol.h"

namespace sluice::intercept {
namespace {

void Warn(void (*warn)(const char*), const char* name, const char* value, const char* why) {
  char msg[512];
  std::snprintf(msg, sizeof(msg), "ignoring %s=\"%s\": %s", name, value, why);
  if (warn != nullptr) {
    warn(msg);
  } else {
    LogAlways("%s", msg);
  }
}

// Copies `value` into `dst` if it fits (with its NUL); false when too long.
bool CopyString(const char* value, char* dst, size_t capacity) {
  const size_t n = std::strlen(value);
  if (n >= capacity)
    return false;
  std::memcpy(dst, value, n + 1);
  return true;
}

}  // namespace

bool ParseInt64(const char* text, int64_t min, int64_t max, int64_t* out) {
  if (text == nullptr || *text == '\0')
    return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < min || v > max)
    return false;
  *out = v;
  return true;
}

namespace {

int ParseStrings(EnvLookup lookup, Config* out, void (*warn)(const char*)) {
  struct StringVar {
    const char* name;
    char* dst;
    size_t capacity;
  };
  const StringVar strings[] = {
      {"SLUICE_REAL_LIBCUDA", out->real_libcuda, sizeof(out->real_libcuda)},
      {"SLUICE_TOKEN_SOCKET", out->token_socket, sizeof(out->token_socket)},
      {"SLUICE_GPU_UUID", out->gpu_uuid, sizeof(out->gpu_uuid)},
  };
  int bad = 0;
  for (const StringVar& s : strings) {
    const char* v = lookup(s.name);
    if (v != nullptr && *v != '\0' && !CopyString(v, s.dst, s.capacity)) {
      Warn(warn, s.name, v, "too long");
      ++bad;
    }
  }
  return bad;
}

int ParseFailPolicy(EnvLookup lookup, Config* out, void (*warn)(const char*)) {
  int bad = 0;
  if (const char* v = lookup("SLUICE_FAIL_POLICY")) {
    if (std::strcmp(v, "open") == 0) {
      out->fail_policy = SLUICE_FAIL_OPEN;
    } else if (std::strcmp(v, "closed") == 0) {
      out->fail_policy = SLUICE_FAIL_CLOSED;
    } else {
      Warn(warn, "SLUICE_FAIL_POLICY", v, "expected open or closed");
      ++bad;
    }
  }
  int64_t ms = 0;
  if (const char* v = lookup("SLUICE_FAIL_TIMEOUT_MS")) {
    if (ParseInt64(v, 1, 3600 * 1000, &ms)) {
      out->fail_timeout_ns = ms * 1000000;
    } else {
      Warn(warn, "SLUICE_FAIL_TIMEOUT_MS", v, "expected milliseconds in [1, 3600000]");
      ++bad;
    }
  }
  return bad;
}

}  // namespace

int ParseConfig(EnvLookup lookup, Config* out, void (*warn)(const char*)) {
  *out = Config{};
  int bad = ParseStrings(lookup, out, warn) + ParseFailPolicy(lookup, out, warn);
  const char* v = lookup("SLUICE_INSTANCE_ID");
  if (v != nullptr && !ParseInt64(v, INT64_MIN, INT64_MAX, &out->instance_id)) {
    Warn(warn, "SLUICE_INSTANCE_ID", v, "not an integer");
    ++bad;
  }
  v = lookup("SLUICE_MEM_LIMIT_BYTES");
  if (v != nullptr && !ParseInt64(v, 0, INT64_MAX, &out->mem_limit_bytes)) {
    Warn(warn, "SLUICE_MEM_LIMIT_BYTES", v, "not a byte count >= 0");
    ++bad;
  }
  v = lookup("SLUICE_INTERCEPT_VERBOSE");
  out->verbose = v != nullptr && std::strcmp(v, "0") != 0 && *v != '\0';
  return bad;
}

}  // namespace sluice::intercept
