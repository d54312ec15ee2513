// MemoryStore: an in-memory Store with the cluster features (revisions, leases, watches), the fake
// that tests of the controller, agents and gateways use. Same contract and version rules as
// SqliteStore and EtcdStore; nothing persists. Thread-safe (one absl::Mutex); each StoreWatch it
// hands out is owned by one thread and must not outlive the store.
#ifndef SLUICE_RUNTIME_STORE_MEMORY_STORE_H_
#define SLUICE_RUNTIME_STORE_MEMORY_STORE_H_

#include <deque>
#include <map>
#include <set>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#include "runtime/store/store.h"

namespace sluice::runtime {

class MemoryStore final : public Store {
 public:
  // Changes kept for watches by default; a watch further behind gets OutOfRange.
  static constexpr int64_t kDefaultHistory = 10000;

  // Leases measured by CLOCK_MONOTONIC (for callers that have no Env).
  MemoryStore();
  // Leases measured by `env`'s clock (a fake clock in tests); `env` must outlive the store.
  // `history` (>= 1) bounds the change log that watches read.
  explicit MemoryStore(const common::Env& env, int64_t history = kDefaultHistory);
  ~MemoryStore() override;

  [[nodiscard]] absl::Status Put(std::string key, std::string value) override;
  absl::StatusOr<std::optional<std::string>> Get(const std::string& key) override;
  absl::StatusOr<std::optional<VersionedValue>> GetVersioned(const std::string& key) override;
  [[nodiscard]] absl::Status Delete(const std::string& key) override;
  absl::StatusOr<std::vector<std::pair<std::string, std::string>>> List(
      const std::string& prefix) override;
  absl::StatusOr<int64_t> PutIf(std::string key, int64_t expected_version,
                                std::string value) override;

  absl::StatusOr<int64_t> Revision() override;
  absl::StatusOr<LeaseId> GrantLease(absl::Duration ttl) override;
  [[nodiscard]] absl::Status KeepAlive(LeaseId lease) override;
  [[nodiscard]] absl::Status RevokeLease(LeaseId lease) override;
  absl::StatusOr<int64_t> PutIfLeased(std::string key, int64_t expected_version,
                                      std::string value, LeaseId lease) override;
  absl::StatusOr<int64_t> PutLeased(std::string key, std::string value, LeaseId lease) override;
  [[nodiscard]] absl::Status DeleteIf(const std::string& key, int64_t expected_version) override;
  absl::StatusOr<StoreSnapshot> ListSnapshot(const std::string& prefix) override;
  absl::StatusOr<std::unique_ptr<StoreWatch>> WatchPrefix(const std::string& prefix,
                                                          int64_t after_revision) override;

  // Deletes the keys of every lease past its deadline now (every other call does this too, so
  // tests need it only to see expiry events without touching the store otherwise).
  void ExpireLeases();

 private:
  class Watch;
  struct Entry {
    std::string value;
    int64_t version = 0;
    LeaseId lease = 0;
  };
  struct Lease {
    absl::Duration ttl;
    absl::Time deadline;
    std::set<std::string> keys;
  };

  absl::Time Now() const;
  void ExpireLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Writes `key` (version + 1) under `lease` (0: none), logging a kPut. The lease must exist.
  int64_t WriteLocked(std::string key, std::string value, LeaseId lease)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Erases `key` if present, logging a kDelete.
  void EraseLocked(const std::string& key) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void LogLocked(WatchEvent event) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status CheckLeaseLocked(LeaseId lease) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The events after `cursor` under `prefix`; advances `cursor`. OutOfRange once compacted.
  absl::StatusOr<std::vector<WatchEvent>> PollLocked(const std::string& prefix, int64_t& cursor)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const common::Env* env_;  // nullptr: CLOCK_MONOTONIC
  const int64_t history_;
  absl::Mutex mu_;
  std::map<std::string, Entry> kv_ ABSL_GUARDED_BY(mu_);
  std::map<LeaseId, Lease> leases_ ABSL_GUARDED_BY(mu_);
  LeaseId next_lease_ ABSL_GUARDED_BY(mu_) = 1;
  int64_t revision_ ABSL_GUARDED_BY(mu_) = 0;
  // The change log: events with revisions in (compacted_, revision_], oldest first.
  std::deque<WatchEvent> log_ ABSL_GUARDED_BY(mu_);
  int64_t compacted_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_STORE_MEMORY_STORE_H_
