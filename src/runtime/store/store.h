// Store: the controller's durable key-value seam (function registry, placements). Implemented by
// SqliteStore (embedded default), MemoryStore (tests) and, later, etcd. Thread safety is per
// implementation; see each header.
#ifndef SLUICE_RUNTIME_STORE_STORE_H_
#define SLUICE_RUNTIME_STORE_STORE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace sluice::runtime {

// A value with its per-key version. Versions follow etcd: a key's version is 1 when it is created,
// grows by 1 on every write, and starts again at 1 after the key is deleted and written anew.
struct VersionedValue {
  std::string value;
  int64_t version = 0;
};

// Keys are non-empty byte strings; values are arbitrary bytes (may be empty). Every method returns
// InvalidArgument for an empty key. Backend failures (I/O, a corrupt file) come back as a non-OK
// Status naming the backend; they never crash.
class Store {
 public:
  virtual ~Store() = default;

  // Creates or overwrites `key`, bumping its version.
  [[nodiscard]] virtual absl::Status Put(std::string key, std::string value) = 0;

  // The value of `key`, or nullopt when absent.
  virtual absl::StatusOr<std::optional<std::string>> Get(const std::string& key) = 0;

  // The value and version of `key`, or nullopt when absent.
  virtual absl::StatusOr<std::optional<VersionedValue>> GetVersioned(const std::string& key) = 0;

  // Removes `key`. Deleting an absent key is OK (idempotent).
  [[nodiscard]] virtual absl::Status Delete(const std::string& key) = 0;

  // Every (key, value) whose key starts with `prefix` (empty: all), sorted by key bytewise.
  virtual absl::StatusOr<std::vector<std::pair<std::string, std::string>>> List(
      const std::string& prefix) = 0;

  // Atomic compare-and-put: writes `value` only if the key's current version equals
  // `expected_version` (0 means "the key must not exist"), and returns the new version.
  // FailedPrecondition (naming the key and both versions) on mismatch, with nothing written;
  // InvalidArgument for a negative `expected_version`.
  virtual absl::StatusOr<int64_t> PutIf(std::string key, int64_t expected_version,
                                        std::string value) = 0;
};

namespace internal {
// Shared argument checks so every implementation rejects the same inputs the same way.
[[nodiscard]] absl::Status ValidateKey(const std::string& key);
[[nodiscard]] absl::Status VersionMismatch(const std::string& key, int64_t expected,
                                           int64_t actual);
}  // namespace internal

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_STORE_STORE_H_
