// SqliteStore: the embedded default Store, one SQLite file in WAL mode. Used by the controller
// (`--store sqlite:PATH`, the default). Tables: `kv(key, value, version, lease)`,
// `changes(rev, key, value, version, type)` (the change log watches read), `leases(id,
// deadline_ns, ttl_ns)` and `meta(name, value)` (the store revision and the compacted revision).
// Every write runs in one `BEGIN IMMEDIATE` transaction that bumps the revision and logs the
// change, so several processes sharing the file (two controllers on one machine) see each other's
// writes through WatchPrefix. Files written before the cluster features are migrated on Open.
// NOT thread-safe: one connection with cached prepared statements; use it (and its watches, which
// must not outlive it) from one thread, the daemon's event loop.
#ifndef SLUICE_RUNTIME_STORE_SQLITE_STORE_H_
#define SLUICE_RUNTIME_STORE_SQLITE_STORE_H_

#include <memory>

#include "absl/functional/function_ref.h"

#include "runtime/store/store.h"

struct sqlite3;
struct sqlite3_stmt;

namespace sluice::runtime {

struct SqliteStoreOptions {
  // The lease clock; nullptr: CLOCK_MONOTONIC, which every process on the machine shares (so
  // processes sharing the file agree on deadlines). Must outlive the store.
  const common::Env* env = nullptr;
  // Revisions of the change log kept for watches (>= 1); a watch further behind gets OutOfRange.
  int64_t history = 10000;
};

class SqliteStore final : public Store {
 public:
  // Opens (creating if absent) the database at `path`. Errors name the path and SQLite's message:
  // a missing directory or unopenable path (FailedPrecondition), a read-only file
  // (PermissionDenied), a file that is not an SQLite database or is corrupt (DataLoss).
  static absl::StatusOr<std::unique_ptr<SqliteStore>> Open(const std::string& path,
                                                           const SqliteStoreOptions& options = {});
  ~SqliteStore() override;

  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

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

  // Deletes the keys of every lease past its deadline now (reads and writes do it lazily too).
  [[nodiscard]] absl::Status ExpireLeases();

  const std::string& path() const { return path_; }

 private:
  class Watch;
  struct Stmt {
    sqlite3_stmt* s = nullptr;
  };
  enum StmtId {
    kGet, kUpsert, kDelete, kList, kBegin, kBeginRead, kCommit, kRollback, kBumpRevision,
    kGetMeta, kLogChange, kTrim, kSetCompacted, kChangesAfter, kInsertLease, kGetLease,
    kTouchLease, kDeleteLease, kExpiredLeases, kAnyExpired, kLeaseKeys, kNumStmts
  };
  struct Row {
    std::string value;
    int64_t version = 0;
    LeaseId lease = 0;
  };

  SqliteStore(std::string path, sqlite3* db, const SqliteStoreOptions& options)
      : path_(std::move(path)), db_(db), options_(options) {}
  [[nodiscard]] absl::Status Init();
  [[nodiscard]] absl::Status Migrate();
  [[nodiscard]] absl::Status Exec(const char* sql, const char* what);
  [[nodiscard]] absl::Status Step(StmtId id, const char* what);  // Runs a no-row statement.
  absl::Status Error(int rc, const char* what) const;
  sqlite3_stmt* stmt(StmtId id) const { return stmts_[id].s; }
  int64_t NowNanos() const;

  // Runs `body` in a BEGIN IMMEDIATE transaction after expiring due leases; commits when it
  // returns OK, rolls back otherwise.
  [[nodiscard]] absl::Status WriteTxn(absl::FunctionRef<absl::Status()> body);
  // Expires due leases (in a write transaction) when there are any; one indexed SELECT if not.
  [[nodiscard]] absl::Status MaybeExpire();
  // The raw operations below run inside WriteTxn.
  absl::StatusOr<std::optional<Row>> ReadRow(const std::string& key);
  absl::StatusOr<int64_t> WriteRow(const std::string& key, const std::string& value,
                                   LeaseId lease);
  [[nodiscard]] absl::Status EraseRow(const std::string& key);
  absl::StatusOr<int64_t> BumpRevision();
  [[nodiscard]] absl::Status LogChange(const WatchEvent& event);
  [[nodiscard]] absl::Status ExpireDue();
  [[nodiscard]] absl::Status DropLease(LeaseId lease);
  [[nodiscard]] absl::Status CheckLease(LeaseId lease);
  absl::StatusOr<int64_t> GetMeta(const char* name);
  // Every change after `cursor` under `prefix`; advances `cursor`. OutOfRange once compacted.
  absl::StatusOr<std::vector<WatchEvent>> ChangesAfter(const std::string& prefix,
                                                       int64_t& cursor);

  std::string path_;
  sqlite3* db_;  // Owned; closed in the destructor after the statements are finalized.
  SqliteStoreOptions options_;
  Stmt stmts_[kNumStmts];
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_STORE_SQLITE_STORE_H_
