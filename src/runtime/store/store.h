// Store: the control plane's durable key-value seam (function registry, placements, nodes,
// leadership). Implemented by SqliteStore (embedded default), MemoryStore (tests) and EtcdStore
// (`--store etcd://HOST:PORT`, issue 12). Thread safety is per implementation; see each header.
// Leases and watches follow etcd v3's semantics so every backend can be swapped for another.
#ifndef SLUICE_RUNTIME_STORE_STORE_H_
#define SLUICE_RUNTIME_STORE_STORE_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace sluice::common {
class Env;
}  // namespace sluice::common

namespace sluice::runtime {

// A value with its per-key version. Versions follow etcd: a key's version is 1 when it is created,
// grows by 1 on every write, and starts again at 1 after the key is deleted and written anew.
struct VersionedValue {
  std::string value;
  int64_t version = 0;
};

// A lease id; 0 means "no lease". Keys put under a lease are deleted (producing kDelete watch
// events) when the lease expires or is revoked, as etcd does.
using LeaseId = int64_t;

// One change seen by a watch. `revision` is the store-wide revision of the change (etcd's
// mod_revision): it grows by 1 (or more, on etcd) with every write, delete or lease expiry.
struct WatchEvent {
  enum class Type { kPut, kDelete };
  Type type = Type::kPut;
  std::string key;
  std::string value;     // empty for kDelete
  int64_t version = 0;   // the key's version after a put; 0 for kDelete
  int64_t revision = 0;  // store-wide revision of this change
};

// A consistent listing: every key under a prefix with its version, and the store revision it
// was read at (start a watch from `revision` to see every later change exactly once).
struct StoreSnapshot {
  std::vector<std::pair<std::string, VersionedValue>> items;  // sorted by key bytewise
  int64_t revision = 0;
};

// A watch on a key prefix. Non-blocking: built for one event loop per daemon (poll it from a
// timer or when the loop wakes). Not thread-safe; one owner.
class StoreWatch {
 public:
  virtual ~StoreWatch() = default;
  // Every change under the prefix since the previous Poll (or since the start revision), oldest
  // first, each exactly once. A non-OK status means the watch is broken (the backend lost the
  // history it needs, e.g. compaction, or the connection): the caller re-lists with
  // ListSnapshot() and opens a new watch from the snapshot's revision.
  virtual absl::StatusOr<std::vector<WatchEvent>> Poll() = 0;
};

// Cluster features (issue 12). They have default bodies returning Unimplemented so a backend can
// be written incrementally; SqliteStore, MemoryStore and EtcdStore implement all of them.
class ClusterStore {
 public:
  virtual ~ClusterStore() = default;
  // The current store-wide revision.
  virtual absl::StatusOr<int64_t> Revision() { return Unimplemented("Revision"); }
  // Grants a lease that expires `ttl` after its grant or its latest KeepAlive (ttl >= 1 s;
  // InvalidArgument otherwise). Expiry is measured by the backend's clock (the Env given to an
  // embedded backend; the etcd server's clock for etcd).
  virtual absl::StatusOr<LeaseId> GrantLease(absl::Duration ttl) {
    return Unimplemented("GrantLease");
  }
  // Restarts the lease's ttl. NotFound (naming the lease) when it expired or was revoked.
  [[nodiscard]] virtual absl::Status KeepAlive(LeaseId lease) {
    return Unimplemented("KeepAlive");
  }
  // Revokes the lease now, deleting its keys. Revoking an unknown lease is OK (idempotent).
  [[nodiscard]] virtual absl::Status RevokeLease(LeaseId lease) {
    return Unimplemented("RevokeLease");
  }
  // Store::PutIf attaching the key to `lease` (0: none). NotFound when the lease is gone; the
  // version rules are PutIf's. Leader election is PutIfLeased(key, 0, id, lease).
  virtual absl::StatusOr<int64_t> PutIfLeased(std::string key, int64_t expected_version,
                                              std::string value, LeaseId lease) {
    return Unimplemented("PutIfLeased");
  }
  // Unconditional put attaching the key to `lease` (0: none); returns the new version.
  virtual absl::StatusOr<int64_t> PutLeased(std::string key, std::string value, LeaseId lease) {
    return Unimplemented("PutLeased");
  }
  // Atomic delete-if-version (0 is rejected): FailedPrecondition on mismatch. Used to resign
  // leadership without deleting a successor's key.
  [[nodiscard]] virtual absl::Status DeleteIf(const std::string& key, int64_t expected_version) {
    return Unimplemented("DeleteIf");
  }
  // Every key under `prefix` with its version, and the revision they were read at.
  virtual absl::StatusOr<StoreSnapshot> ListSnapshot(const std::string& prefix) {
    return Unimplemented("ListSnapshot");
  }
  // Watches `prefix` for changes with revision > `after_revision`.
  virtual absl::StatusOr<std::unique_ptr<StoreWatch>> WatchPrefix(const std::string& prefix,
                                                                  int64_t after_revision) {
    return Unimplemented("WatchPrefix");
  }

 private:
  static absl::Status Unimplemented(const char* what);
};

// Keys are non-empty byte strings; values are arbitrary bytes (may be empty). Every method returns
// InvalidArgument for an empty key. Backend failures (I/O, a corrupt file) come back as a non-OK
// Status naming the backend; they never crash.
class Store : public ClusterStore {
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
// Like the above for operation `op` ("DeleteIf", "PutIfLeased").
[[nodiscard]] absl::Status VersionMismatch(const char* op, const std::string& key,
                                           int64_t expected, int64_t actual);
// InvalidArgument unless ttl >= 1 s.
[[nodiscard]] absl::Status ValidateTtl(absl::Duration ttl);
// NotFound naming the lease (expired, revoked or never granted).
[[nodiscard]] absl::Status LeaseNotFound(LeaseId lease);
// PutIf's (>= 0) and DeleteIf's (>= 1) checks on `expected_version`.
[[nodiscard]] absl::Status ValidatePutIfVersion(int64_t expected_version);
[[nodiscard]] absl::Status ValidateDeleteIfVersion(int64_t expected_version);
}  // namespace internal

// Opens a store by URI: `sqlite:PATH` (or a bare path: the embedded default), `etcd://HOST:PORT`
// (EtcdStore over etcd's v3 JSON gateway), `memory:` (tests). InvalidArgument naming the URI for
// an unknown scheme; the backend's error when it cannot be opened or reached. `env` is the clock
// for embedded leases; it must outlive the store. Implemented in store_open.cc (issue 12).
absl::StatusOr<std::unique_ptr<Store>> OpenStore(const std::string& uri, const common::Env& env);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_STORE_STORE_H_
