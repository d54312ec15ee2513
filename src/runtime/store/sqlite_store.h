// SqliteStore: the embedded default Store, one SQLite file in WAL mode holding
// `kv(key TEXT PRIMARY KEY, value BLOB, version INTEGER)`. Used by the controller.
// NOT thread-safe: one connection with cached prepared statements; use it from one thread (the
// controller's event loop). Other processes may open the same file; PutIf is atomic across them.
#ifndef SLUICE_RUNTIME_STORE_SQLITE_STORE_H_
#define SLUICE_RUNTIME_STORE_SQLITE_STORE_H_

#include <memory>

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

  const std::string& path() const { return path_; }

 private:
  struct StmtDeleter {
    void operator()(sqlite3_stmt* s) const;
  };
  using Stmt = std::unique_ptr<sqlite3_stmt, StmtDeleter>;
  enum StmtId { kPut, kGet, kDelete, kList, kBegin, kCommit, kRollback, kNumStmts };

  SqliteStore(std::string path, sqlite3* db, const SqliteStoreOptions& options)
      : path_(std::move(path)), db_(db), options_(options) {}
  [[nodiscard]] absl::Status Init();
  [[nodiscard]] absl::Status Exec(const char* sql, const char* what);
  [[nodiscard]] absl::Status Step(StmtId id, const char* what);  // Runs a no-row statement.
  absl::Status Error(int rc, const char* what) const;
  absl::StatusOr<int64_t> PutIfLocked(const std::string& key, int64_t expected_version,
                                      const std::string& value);

  std::string path_;
  sqlite3* db_;  // Owned; closed in the destructor after the statements are finalized.
  SqliteStoreOptions options_;
  Stmt stmts_[kNumStmts];
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_STORE_SQLITE_STORE_H_
