// SqliteStore over the SQLite C API: opening, the schema and its migration, errors, and the plain
// key-value operations. Leases, revisions and watches are in sqlite_store_cluster.cc. Prepared
// statements are cached per connection; every SQLite result code becomes an absl::Status naming
// the file. Not thread-safe (see the header).
#include "runtime/store/sqlite_store.h"

#include <sqlite3.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

#include "common/status.h"
#include "runtime/store/sqlite_stmt.h"

namespace sluice::runtime {
namespace {

using internal::SqliteStmt;

// Indexed by SqliteStore::StmtId.
constexpr const char* kSql[] = {
    "SELECT value, version, lease FROM kv WHERE key = ?1",  // kGet
    // kUpsert: create at version 1, or overwrite and bump; the key moves to lease ?3.
    "INSERT INTO kv(key, value, version, lease) VALUES(?1, ?2, 1, ?3) "
    "ON CONFLICT(key) DO UPDATE SET value = excluded.value, version = kv.version + 1, "
    "lease = excluded.lease RETURNING version",
    "DELETE FROM kv WHERE key = ?1",                                    // kDelete
    "SELECT key, value, version FROM kv WHERE key >= ?1 ORDER BY key",  // kList
    "BEGIN IMMEDIATE",                                                  // kBegin
    "BEGIN",                                                            // kBeginRead
    "COMMIT",                                                           // kCommit
    "ROLLBACK",                                                         // kRollback
    "UPDATE meta SET value = value + 1 WHERE name = 'revision' RETURNING value",  // kBumpRevision
    "SELECT value FROM meta WHERE name = ?1",                                     // kGetMeta
    "INSERT INTO changes(rev, key, value, version, type) VALUES(?1, ?2, ?3, ?4, ?5)",  // kLogChange
    "DELETE FROM changes WHERE rev <= ?1",                                         // kTrim
    "UPDATE meta SET value = ?1 WHERE name = 'compacted' AND value < ?1",  // kSetCompacted
    "SELECT rev, key, value, version, type FROM changes WHERE rev > ?1 ORDER BY rev",
    "INSERT INTO leases(deadline_ns, ttl_ns) VALUES(?1, ?2)",  // kInsertLease
    "SELECT ttl_ns FROM leases WHERE id = ?1",                 // kGetLease
    "UPDATE leases SET deadline_ns = ?2 WHERE id = ?1",        // kTouchLease
    "DELETE FROM leases WHERE id = ?1",                        // kDeleteLease
    // kExpiredLeases / kAnyExpired: past the deadline, or renewed "in the future" (the monotonic
    // clock restarted with a reboot), which no live lease can be.
    "SELECT id FROM leases WHERE deadline_ns <= ?1 OR deadline_ns - ttl_ns > ?1",
    "SELECT 1 FROM leases WHERE deadline_ns <= ?1 OR deadline_ns - ttl_ns > ?1 LIMIT 1",
    "SELECT key FROM kv WHERE lease = ?1",  // kLeaseKeys
};
static_assert(std::size(kSql) == 21);

// The schema, created or completed under the write lock so that processes opening one file at
// once do not race. kv predates the cluster features: its `lease` column is added by Migrate.
constexpr const char* kSchema =
    "CREATE TABLE IF NOT EXISTS kv(key TEXT PRIMARY KEY, value BLOB, version INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS meta(name TEXT PRIMARY KEY, value INTEGER NOT NULL);"
    "INSERT OR IGNORE INTO meta(name, value) VALUES('revision', 0), ('compacted', 0);"
    "CREATE TABLE IF NOT EXISTS changes(rev INTEGER PRIMARY KEY, key TEXT NOT NULL, value BLOB,"
    " version INTEGER NOT NULL, type INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS leases(id INTEGER PRIMARY KEY AUTOINCREMENT,"
    " deadline_ns INTEGER NOT NULL, ttl_ns INTEGER NOT NULL);";

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

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteStore>> SqliteStore::Open(const std::string& path,
                                                               const SqliteStoreOptions& options) {
  if (options.history < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("sqlite store '", path, "': history must be >= 1"));
  }
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
  SLUICE_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE", "begin schema"));
  absl::Status schema = Exec(kSchema, "create tables");
  if (schema.ok())
    schema = Migrate();
  if (schema.ok())
    schema = Exec("COMMIT", "commit schema");
  if (!schema.ok()) {
    (void)Exec("ROLLBACK", "rollback");  // The schema error is the one worth reporting.
    return schema;
  }
  for (int i = 0; i < kNumStmts; ++i) {
    const int rc = sqlite3_prepare_v2(db_, kSql[i], -1, &stmts_[i].s, nullptr);
    if (rc != SQLITE_OK)
      return Error(rc, "prepare");
  }
  return absl::OkStatus();
}

// Adds kv.lease to files written before the cluster features (their keys had no lease).
absl::Status SqliteStore::Migrate() {
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v2(db_, "SELECT 1 FROM pragma_table_info('kv') WHERE name = 'lease'",
                              -1, &raw, nullptr);
  if (rc != SQLITE_OK)
    return Error(rc, "read schema");
  rc = sqlite3_step(raw);
  sqlite3_finalize(raw);
  if (rc == SQLITE_DONE) {
    SLUICE_RETURN_IF_ERROR(
        Exec("ALTER TABLE kv ADD COLUMN lease INTEGER NOT NULL DEFAULT 0", "migrate kv"));
  } else if (rc != SQLITE_ROW) {
    return Error(rc, "read schema");
  }
  return Exec("CREATE INDEX IF NOT EXISTS kv_lease ON kv(lease) WHERE lease != 0", "index kv");
}

SqliteStore::~SqliteStore() {
  for (Stmt& s : stmts_)
    sqlite3_finalize(s.s);  // Accepts nullptr.
  sqlite3_close_v2(db_);    // Accepts nullptr.
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
  SqliteStmt s(stmt(id));
  const int rc = s.Step();
  return rc == SQLITE_DONE ? absl::OkStatus() : Error(rc, what);
}

absl::Status SqliteStore::Put(std::string key, std::string value) {
  return PutLeased(std::move(key), std::move(value), 0).status();
}

absl::StatusOr<std::optional<std::string>> SqliteStore::Get(const std::string& key) {
  SLUICE_ASSIGN_OR_RETURN(std::optional<VersionedValue> v, GetVersioned(key));
  if (!v.has_value())
    return std::optional<std::string>();
  return std::optional<std::string>(std::move(v->value));
}

absl::StatusOr<std::optional<VersionedValue>> SqliteStore::GetVersioned(const std::string& key) {
  SLUICE_RETURN_IF_ERROR(internal::ValidateKey(key));
  SLUICE_RETURN_IF_ERROR(MaybeExpire());
  SLUICE_ASSIGN_OR_RETURN(std::optional<Row> row, ReadRow(key));
  if (!row.has_value())
    return std::optional<VersionedValue>();
  return std::optional<VersionedValue>(VersionedValue{std::move(row->value), row->version});
}

absl::StatusOr<std::optional<SqliteStore::Row>> SqliteStore::ReadRow(const std::string& key) {
  SqliteStmt s(stmt(kGet));
  s.Text(1, key);
  const int rc = s.Step();
  if (rc == SQLITE_DONE)
    return std::optional<Row>();
  if (rc != SQLITE_ROW)
    return Error(rc, "get");
  return std::optional<Row>(Row{s.ColumnBytes(0), s.ColumnInt(1), s.ColumnInt(2)});
}

absl::Status SqliteStore::Delete(const std::string& key) {
  SLUICE_RETURN_IF_ERROR(internal::ValidateKey(key));
  return WriteTxn([&] { return EraseRow(key); });
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> SqliteStore::List(
    const std::string& prefix) {
  SLUICE_ASSIGN_OR_RETURN(StoreSnapshot snapshot, ListSnapshot(prefix));
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(snapshot.items.size());
  for (auto& [key, v] : snapshot.items)
    out.emplace_back(std::move(key), std::move(v.value));
  return out;
}

absl::StatusOr<StoreSnapshot> SqliteStore::ListSnapshot(const std::string& prefix) {
  SLUICE_RETURN_IF_ERROR(MaybeExpire());
  // One read transaction: the revision and the rows come from the same snapshot of the file.
  SLUICE_RETURN_IF_ERROR(Step(kBeginRead, "begin read"));
  StoreSnapshot out;
  absl::StatusOr<int64_t> revision = GetMeta("revision");
  int rc = SQLITE_DONE;
  if (revision.ok()) {
    SqliteStmt s(stmt(kList));
    // Keys sort bytewise (BINARY collation), so the prefix range starts at `prefix` and ends at
    // the first key that does not start with it.
    s.Text(1, prefix);
    while ((rc = s.Step()) == SQLITE_ROW) {
      std::string key = s.ColumnBytes(0);
      if (!absl::StartsWith(key, prefix))
        break;
      out.items.emplace_back(std::move(key), VersionedValue{s.ColumnBytes(1), s.ColumnInt(2)});
    }
  }
  (void)Step(kCommit, "end read");  // A read transaction has nothing to lose.
  if (!revision.ok())
    return revision.status();
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    return Error(rc, "list");
  out.revision = *revision;
  return out;
}

absl::StatusOr<int64_t> SqliteStore::PutIf(std::string key, int64_t expected_version,
                                           std::string value) {
  return PutIfLeased(std::move(key), expected_version, std::move(value), 0);
}

absl::StatusOr<int64_t> SqliteStore::PutIfLeased(std::string key, int64_t expected_version,
                                                 std::string value, LeaseId lease) {
  SLUICE_RETURN_IF_ERROR(internal::ValidateKey(key));
  SLUICE_RETURN_IF_ERROR(internal::ValidatePutIfVersion(expected_version));
  int64_t version = 0;
  // BEGIN IMMEDIATE takes the write lock first, so no other connection can write between the
  // version check and the put.
  absl::Status status = WriteTxn([&]() -> absl::Status {
    SLUICE_RETURN_IF_ERROR(CheckLease(lease));
    SLUICE_ASSIGN_OR_RETURN(std::optional<Row> row, ReadRow(key));
    const int64_t actual = row.has_value() ? row->version : 0;
    if (actual != expected_version)
      return internal::VersionMismatch(key, expected_version, actual);
    SLUICE_ASSIGN_OR_RETURN(version, WriteRow(key, value, lease));
    return absl::OkStatus();
  });
  if (!status.ok())
    return status;
  return version;
}

absl::StatusOr<int64_t> SqliteStore::PutLeased(std::string key, std::string value,
                                               LeaseId lease) {
  SLUICE_RETURN_IF_ERROR(internal::ValidateKey(key));
  int64_t version = 0;
  absl::Status status = WriteTxn([&]() -> absl::Status {
    SLUICE_RETURN_IF_ERROR(CheckLease(lease));
    SLUICE_ASSIGN_OR_RETURN(version, WriteRow(key, value, lease));
    return absl::OkStatus();
  });
  if (!status.ok())
    return status;
  return version;
}

absl::Status SqliteStore::DeleteIf(const std::string& key, int64_t expected_version) {
  SLUICE_RETURN_IF_ERROR(internal::ValidateKey(key));
  SLUICE_RETURN_IF_ERROR(internal::ValidateDeleteIfVersion(expected_version));
  return WriteTxn([&]() -> absl::Status {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Row> row, ReadRow(key));
    const int64_t actual = row.has_value() ? row->version : 0;
    if (actual != expected_version)
      return internal::VersionMismatch("DeleteIf", key, expected_version, actual);
    return EraseRow(key);
  });
}

}  // namespace sluice::runtime
