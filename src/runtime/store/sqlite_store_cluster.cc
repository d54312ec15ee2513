// SqliteStore's cluster features: the store revision and change log (every write in one
// transaction bumps `meta.revision` and appends to `changes`, trimmed to the last `history`
// revisions), leases with lazy expiry, and watches that read the change log with one indexed
// SELECT per Poll (so they see writes of every process sharing the file). Not thread-safe.
#include <sqlite3.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

#include "common/env.h"
#include "common/status.h"
#include "runtime/common/loop_env.h"
#include "runtime/store/sqlite_stmt.h"
#include "runtime/store/sqlite_store.h"

namespace sluice::runtime {
namespace {

using internal::SqliteStmt;

constexpr int64_t kTypePut = 0;  // changes.type
constexpr int64_t kTypeDelete = 1;

}  // namespace

// A cursor into the change log. Owned by one thread; must not outlive the store.
class SqliteStore::Watch final : public StoreWatch {
 public:
  Watch(SqliteStore& store, std::string prefix, int64_t cursor)
      : store_(store), prefix_(std::move(prefix)), cursor_(cursor) {}
  absl::StatusOr<std::vector<WatchEvent>> Poll() override {
    SLUICE_RETURN_IF_ERROR(store_.MaybeExpire());
    return store_.ChangesAfter(prefix_, cursor_);
  }

 private:
  SqliteStore& store_;
  const std::string prefix_;
  int64_t cursor_;  // the revision of the last change read (or the start revision)
};

int64_t SqliteStore::NowNanos() const {
  return absl::ToUnixNanos(options_.env != nullptr ? options_.env->Now() : MonotonicNow());
}

absl::Status SqliteStore::WriteTxn(absl::FunctionRef<absl::Status()> body) {
  SLUICE_RETURN_IF_ERROR(Step(kBegin, "begin"));
  absl::Status status = ExpireDue();
  if (status.ok())
    status = body();
  if (status.ok())
    status = Step(kCommit, "commit");
  if (!status.ok())
    (void)Step(kRollback, "rollback");  // The operation's error is the one worth reporting.
  return status;
}

absl::Status SqliteStore::MaybeExpire() {
  SqliteStmt s(stmt(kAnyExpired));
  s.Int(1, NowNanos());
  const int rc = s.Step();
  if (rc == SQLITE_DONE)
    return absl::OkStatus();
  if (rc != SQLITE_ROW)
    return Error(rc, "check leases");
  return WriteTxn([] { return absl::OkStatus(); });  // WriteTxn expires them.
}

absl::Status SqliteStore::ExpireLeases() {
  return WriteTxn([] { return absl::OkStatus(); });
}

absl::Status SqliteStore::ExpireDue() {
  std::vector<LeaseId> due;
  {
    SqliteStmt s(stmt(kExpiredLeases));
    s.Int(1, NowNanos());
    int rc;
    while ((rc = s.Step()) == SQLITE_ROW)
      due.push_back(s.ColumnInt(0));
    if (rc != SQLITE_DONE)
      return Error(rc, "expire leases");
  }
  for (LeaseId lease : due)
    SLUICE_RETURN_IF_ERROR(DropLease(lease));
  return absl::OkStatus();
}

// Deletes the lease's keys (each a logged change) and the lease.
absl::Status SqliteStore::DropLease(LeaseId lease) {
  std::vector<std::string> keys;
  {
    SqliteStmt s(stmt(kLeaseKeys));
    s.Int(1, lease);
    int rc;
    while ((rc = s.Step()) == SQLITE_ROW)
      keys.push_back(s.ColumnBytes(0));
    if (rc != SQLITE_DONE)
      return Error(rc, "lease keys");
  }
  for (const std::string& key : keys)
    SLUICE_RETURN_IF_ERROR(EraseRow(key));
  SqliteStmt s(stmt(kDeleteLease));
  s.Int(1, lease);
  const int rc = s.Step();
  return rc == SQLITE_DONE ? absl::OkStatus() : Error(rc, "delete lease");
}

absl::Status SqliteStore::CheckLease(LeaseId lease) {
  if (lease == 0)
    return absl::OkStatus();
  SqliteStmt s(stmt(kGetLease));
  s.Int(1, lease);
  const int rc = s.Step();
  if (rc == SQLITE_DONE)
    return internal::LeaseNotFound(lease);
  return rc == SQLITE_ROW ? absl::OkStatus() : Error(rc, "get lease");
}

absl::StatusOr<int64_t> SqliteStore::GetMeta(const char* name) {
  SqliteStmt s(stmt(kGetMeta));
  s.Text(1, name);
  const int rc = s.Step();
  if (rc == SQLITE_ROW)
    return s.ColumnInt(0);
  if (rc == SQLITE_DONE) {
    return absl::DataLossError(
        absl::StrCat("sqlite store '", path_, "': meta row '", name, "' is missing"));
  }
  return Error(rc, "read meta");
}

absl::StatusOr<int64_t> SqliteStore::BumpRevision() {
  int64_t revision = 0;
  {
    SqliteStmt s(stmt(kBumpRevision));
    const int rc = s.Step();
    if (rc != SQLITE_ROW)
      return Error(rc, "bump revision");
    revision = s.ColumnInt(0);
    if (s.Step() != SQLITE_DONE)
      return Error(sqlite3_errcode(db_), "bump revision");
  }
  const int64_t horizon = revision - options_.history;
  if (horizon > 0) {
    SqliteStmt trim(stmt(kTrim));
    trim.Int(1, horizon);
    int rc = trim.Step();
    if (rc != SQLITE_DONE)
      return Error(rc, "trim changes");
    SqliteStmt mark(stmt(kSetCompacted));
    mark.Int(1, horizon);
    rc = mark.Step();
    if (rc != SQLITE_DONE)
      return Error(rc, "mark compacted");
  }
  return revision;
}

absl::Status SqliteStore::LogChange(const WatchEvent& event) {
  SqliteStmt s(stmt(kLogChange));
  s.Int(1, event.revision).Text(2, event.key).Blob(3, event.value).Int(4, event.version);
  s.Int(5, event.type == WatchEvent::Type::kPut ? kTypePut : kTypeDelete);
  const int rc = s.Step();
  return rc == SQLITE_DONE ? absl::OkStatus() : Error(rc, "log change");
}

absl::StatusOr<int64_t> SqliteStore::WriteRow(const std::string& key, const std::string& value,
                                              LeaseId lease) {
  int64_t version = 0;
  {
    SqliteStmt s(stmt(kUpsert));
    s.Text(1, key).Blob(2, value).Int(3, lease);
    const int rc = s.Step();
    if (rc != SQLITE_ROW)
      return Error(rc, "put");
    version = s.ColumnInt(0);
    if (s.Step() != SQLITE_DONE)
      return Error(sqlite3_errcode(db_), "put");
  }
  SLUICE_ASSIGN_OR_RETURN(int64_t revision, BumpRevision());
  SLUICE_RETURN_IF_ERROR(LogChange(WatchEvent{WatchEvent::Type::kPut, key, value, version,
                                              revision}));
  return version;
}

absl::Status SqliteStore::EraseRow(const std::string& key) {
  {
    SqliteStmt s(stmt(kDelete));
    s.Text(1, key);
    const int rc = s.Step();
    if (rc != SQLITE_DONE)
      return Error(rc, "delete");
  }
  if (sqlite3_changes(db_) == 0)
    return absl::OkStatus();  // absent: no change, no revision
  SLUICE_ASSIGN_OR_RETURN(int64_t revision, BumpRevision());
  return LogChange(WatchEvent{WatchEvent::Type::kDelete, key, "", 0, revision});
}

absl::StatusOr<int64_t> SqliteStore::Revision() {
  SLUICE_RETURN_IF_ERROR(MaybeExpire());
  return GetMeta("revision");
}

absl::StatusOr<LeaseId> SqliteStore::GrantLease(absl::Duration ttl) {
  SLUICE_RETURN_IF_ERROR(internal::ValidateTtl(ttl));
  LeaseId id = 0;
  absl::Status status = WriteTxn([&]() -> absl::Status {
    SqliteStmt s(stmt(kInsertLease));
    const int64_t ttl_ns = absl::ToInt64Nanoseconds(ttl);
    s.Int(1, NowNanos() + ttl_ns).Int(2, ttl_ns);
    const int rc = s.Step();
    if (rc != SQLITE_DONE)
      return Error(rc, "grant lease");
    id = sqlite3_last_insert_rowid(db_);
    return absl::OkStatus();
  });
  if (!status.ok())
    return status;
  return id;
}

absl::Status SqliteStore::KeepAlive(LeaseId lease) {
  return WriteTxn([&]() -> absl::Status {
    int64_t ttl_ns = 0;
    {
      SqliteStmt s(stmt(kGetLease));
      s.Int(1, lease);
      const int rc = s.Step();
      if (rc == SQLITE_DONE)
        return internal::LeaseNotFound(lease);
      if (rc != SQLITE_ROW)
        return Error(rc, "get lease");
      ttl_ns = s.ColumnInt(0);
    }
    SqliteStmt touch(stmt(kTouchLease));
    touch.Int(1, lease).Int(2, NowNanos() + ttl_ns);
    const int rc = touch.Step();
    return rc == SQLITE_DONE ? absl::OkStatus() : Error(rc, "keep lease alive");
  });
}

absl::Status SqliteStore::RevokeLease(LeaseId lease) {
  return WriteTxn([&] { return DropLease(lease); });
}

absl::StatusOr<std::unique_ptr<StoreWatch>> SqliteStore::WatchPrefix(const std::string& prefix,
                                                                     int64_t after_revision) {
  SLUICE_ASSIGN_OR_RETURN(int64_t compacted, GetMeta("compacted"));
  if (after_revision < compacted) {
    return absl::OutOfRangeError(absl::StrCat("sqlite store '", path_, "': watch from revision ",
                                              after_revision, " is compacted (history starts at ",
                                              compacted + 1, ")"));
  }
  return std::make_unique<Watch>(*this, prefix, after_revision);
}

absl::StatusOr<std::vector<WatchEvent>> SqliteStore::ChangesAfter(const std::string& prefix,
                                                                  int64_t& cursor) {
  std::vector<WatchEvent> out;
  int64_t last = cursor;
  {
    SqliteStmt s(stmt(kChangesAfter));
    s.Int(1, cursor);
    int rc;
    while ((rc = s.Step()) == SQLITE_ROW) {
      last = s.ColumnInt(0);
      std::string key = s.ColumnBytes(1);
      if (!absl::StartsWith(key, prefix))
        continue;
      const bool put = s.ColumnInt(4) == kTypePut;
      out.push_back(WatchEvent{put ? WatchEvent::Type::kPut : WatchEvent::Type::kDelete,
                               std::move(key), put ? s.ColumnBytes(2) : "", s.ColumnInt(3),
                               last});
    }
    if (rc != SQLITE_DONE)
      return Error(rc, "poll changes");
  }
  // Compaction only moves forward, so reading it after the changes tells whether any change
  // after the cursor was trimmed before that read.
  SLUICE_ASSIGN_OR_RETURN(int64_t compacted, GetMeta("compacted"));
  if (cursor < compacted) {
    return absl::OutOfRangeError(absl::StrCat("sqlite store '", path_, "': watch at revision ",
                                              cursor, " fell behind the history (starts at ",
                                              compacted + 1, "); re-list and watch again"));
  }
  cursor = last;
  return out;
}

}  // namespace sluice::runtime
