// SqliteStore over the SQLite C API: prepared statements cached per connection, every SQLite
// result code mapped to an absl::Status naming the file. Not thread-safe (see the header).
#include "runtime/store/sqlite_store.h"

#include <sqlite3.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

#include "common/status.h"

namespace sluice::runtime {
namespace {

constexpr const char* kSql[] = {
    // kPut: create at version 1, or overwrite and bump.
    "INSERT INTO kv(key, value, version) VALUES(?1, ?2, 1) "
    "ON CONFLICT(key) DO UPDATE SET value = excluded.value, version = kv.version + 1",
    "SELECT value, version FROM kv WHERE key = ?1",            // kGet
    "DELETE FROM kv WHERE key = ?1",                           // kDelete
    "SELECT key, value FROM kv WHERE key >= ?1 ORDER BY key",  // kList
    "BEGIN IMMEDIATE",                                         // kBegin
    "COMMIT",                                                  // kCommit
    "ROLLBACK",                                                // kRollback
};

absl::StatusCode CodeFor(int rc) {
  switch (rc & 0xff) {
    case SQLITE_NOTADB:
    case SQLITE_CORRUPT:
      return absl::StatusCode::kDataLoss;
    case SQLITE_READONLY:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return absl::StatusCode::kPermissionDenied;
    case SQLITE_CANTOPEN:
      return absl::StatusCode::kFailedPrecondition;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
    case SQLITE_FULL:
    case SQLITE_IOERR:
      return absl::StatusCode::kUnavailable;
    default:
      return absl::StatusCode::kInternal;
  }
}

std::string Column(sqlite3_stmt* s, int i) {
  const void* data = sqlite3_column_blob(s, i);
  const int n = sqlite3_column_bytes(s, i);
  return data == nullptr ? std::string() : std::string(static_cast<const char*>(data), n);
}

// Resets a cached statement and clears its bindings when the scope ends.
class ResetOnExit {
 public:
  explicit ResetOnExit(sqlite3_stmt* s) : s_(s) {}
  ~ResetOnExit() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  ResetOnExit(const ResetOnExit&) = delete;
  ResetOnExit& operator=(const ResetOnExit&) = delete;

 private:
  sqlite3_stmt* s_;
};

}  // namespace

void SqliteStore::StmtDeleter::operator()(sqlite3_stmt* s) const {
  sqlite3_finalize(s);
}

absl::StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& path,
                                                               const SqliteStoreOptions& options) {
  sqlite3* db = nullptr;
  const int rc =
      sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  // sqlite3_open_v2 hands back a handle even on failure; the store owns it from here on.
  std::unique_ptr<SqliteStore> store(new SqliteStore(path, db, options));
  if (db == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("sqlite store '", path, "': out of memory opening the database"));
  }
  if (rc != SQLITE_OK)
    return store->Error(rc, "open");
  SLUICE_RETURN_IF_ERROR(store->Init());
  return store;
}

absl::Status SqliteStore::Init() {
  sqlite3_extended_result_codes(db_, 1);
  if (sqlite3_db_readonly(db_, "main") == 1) {
    return absl::PermissionDeniedError(
        absl::StrCat("sqlite store '", path_, "': open: file is not writable"));
  }
  sqlite3_busy_timeout(db_, 5000);
  SLUICE_RETURN_IF_ERROR(Exec("PRAGMA journal_mode=WAL", "enable WAL"));
  SLUICE_RETURN_IF_ERROR(Exec(
      "CREATE TABLE IF NOT EXISTS kv(key TEXT PRIMARY KEY, value BLOB, version INTEGER NOT NULL)",
      "create table"));
  for (int i = 0; i < kNumStmts; ++i) {
    sqlite3_stmt* s = nullptr;
    const int rc = sqlite3_prepare_v2(db_, kSql[i], -1, &s, nullptr);
    stmts_[i].reset(s);
    if (rc != SQLITE_OK)
      return Error(rc, "prepare");
  }
  return absl::OkStatus();
}

SqliteStore::~SqliteStore() {
  for (Stmt& s : stmts_)
    s.reset();
  sqlite3_close_v2(db_);  // Accepts nullptr.
}

absl::Status SqliteStore::Error(int rc, const char* what) const {
  const char* msg = db_ != nullptr ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  return absl::Status(CodeFor(rc), absl::StrCat("sqlite store '", path_, "': ", what, ": ", msg,
                                                " (sqlite code ", rc, ")"));
}

absl::Status SqliteStore::Exec(const char* sql, const char* what) {
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, nullptr);
  return rc == SQLITE_OK ? absl::OkStatus() : Error(rc, what);
}

absl::Status SqliteStore::Step(StmtId id, const char* what) {
  sqlite3_stmt* s = stmts_[id].get();
  ResetOnExit reset(s);
  const int rc = sqlite3_step(s);
  return rc == SQLITE_DONE ? absl::OkStatus() : Error(rc, what);
}

absl::Status SqliteStore::Put(std::string key, std::string value) {
  SLUICE_RETURN_IF_ERROR(internal::ValidateKey(key));
  sqlite3_stmt* s = stmts_[kPut].get();
  // Bindings are SQLITE_STATIC: `key` and `value` outlive the Step (which resets the statement).
  sqlite3_bind_text(s, 1, key.data(), static_cast<int>(key.size()), SQLITE_STATIC);
  sqlite3_bind_blob(s, 2, value.data(), static_cast<int>(value.size()), SQLITE_STATIC);
  return Step(kPut, "put");
}

absl::StatusOr<std::optional<std::string>> SqliteStore::Get(const std::string& key) {
  SLUICE_ASSIGN_OR_RETURN(std::optional<VersionedValue> v, GetVersioned(key));
  if (!v.has_value())
    return std::optional<std::string>();
  return std::optional<std::string>(std::move(v->value));
}

absl::StatusOr<std::optional<VersionedValue>> SqliteStore::GetVersioned(const std::string& key) {
  SLUICE_RETURN_IF_ERROR(internal::ValidateKey(key));
  sqlite3_stmt* s = stmts_[kGet].get();
  ResetOnExit reset(s);
  sqlite3_bind_text(s, 1, key.data(), static_cast<int>(key.size()), SQLITE_STATIC);
  const int rc = sqlite3_step(s);
  if (rc == SQLITE_DONE)
    return std::optional<VersionedValue>();
  if (rc != SQLITE_ROW)
    return Error(rc, "get");
  return std::optional<VersionedValue>(VersionedValue{Column(s, 0), sqlite3_column_int64(s, 1)});
}

absl::Status SqliteStore::Delete(const std::string& key) {
  SLUICE_RETURN_IF_ERROR(internal::ValidateKey(key));
  sqlite3_bind_text(stmts_[kDelete].get(), 1, key.data(), static_cast<int>(key.size()),
                    SQLITE_STATIC);
  return Step(kDelete, "delete");
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> SqliteStore::List(
    const std::string& prefix) {
  sqlite3_stmt* s = stmts_[kList].get();
  ResetOnExit reset(s);
  // Keys sort bytewise (BINARY collation), so the prefix range starts at `prefix` and ends at the
  // first key that does not start with it.
  sqlite3_bind_text(s, 1, prefix.data(), static_cast<int>(prefix.size()), SQLITE_STATIC);
  std::vector<std::pair<std::string, std::string>> out;
  int rc;
  while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
    std::string key = Column(s, 0);
    if (!absl::StartsWith(key, prefix))
      return out;
    out.emplace_back(std::move(key), Column(s, 1));
  }
  if (rc != SQLITE_DONE)
    return Error(rc, "list");
  return out;
}

absl::StatusOr<int64_t> SqliteStore::PutIf(std::string key, int64_t expected_version,
                                           std::string value) {
  SLUICE_RETURN_IF_ERROR(internal::ValidateKey(key));
  if (expected_version < 0) {
    return absl::InvalidArgumentError("store: PutIf expected_version must be >= 0");
  }
  // BEGIN IMMEDIATE takes the write lock first, so no other connection can write between the
  // version check and the put.
  SLUICE_RETURN_IF_ERROR(Step(kBegin, "begin"));
  absl::StatusOr<int64_t> result = PutIfLocked(key, expected_version, value);
  if (!result.ok()) {
    (void)Step(kRollback, "rollback");  // The operation's error is the one worth reporting.
    return result;
  }
  absl::Status commit = Step(kCommit, "commit");
  if (!commit.ok()) {
    (void)Step(kRollback, "rollback");
    return commit;
  }
  return result;
}

absl::StatusOr<int64_t> SqliteStore::PutIfLocked(const std::string& key, int64_t expected_version,
                                                 const std::string& value) {
  SLUICE_ASSIGN_OR_RETURN(std::optional<VersionedValue> current, GetVersioned(key));
  const int64_t actual = current.has_value() ? current->version : 0;
  if (actual != expected_version)
    return internal::VersionMismatch(key, expected_version, actual);
  SLUICE_RETURN_IF_ERROR(Put(key, value));
  return actual + 1;
}

}  // namespace sluice::runtime
