// SqliteStmt: binds, steps and reads one cached prepared statement, resetting it (and clearing
// its bindings) when it goes out of scope. Internal to SqliteStore's .cc files; not thread-safe.
#ifndef SLUICE_RUNTIME_STORE_SQLITE_STMT_H_
#define SLUICE_RUNTIME_STORE_SQLITE_STMT_H_

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace sluice::runtime::internal {

class SqliteStmt {
 public:
  explicit SqliteStmt(sqlite3_stmt* s) : s_(s) {}
  ~SqliteStmt() {
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  SqliteStmt(const SqliteStmt&) = delete;
  SqliteStmt& operator=(const SqliteStmt&) = delete;

  // Keys are TEXT (so they compare bytewise with the rows already stored), values BLOBs. The
  // bound bytes must outlive the statement's use (SQLITE_STATIC).
  SqliteStmt& Text(int i, std::string_view v) {
    sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
    return *this;
  }
  SqliteStmt& Blob(int i, std::string_view v) {
    sqlite3_bind_blob(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_STATIC);
    return *this;
  }
  SqliteStmt& Int(int i, int64_t v) {
    sqlite3_bind_int64(s_, i, v);
    return *this;
  }
  // SQLITE_ROW, SQLITE_DONE or an error code.
  int Step() { return sqlite3_step(s_); }
  int64_t ColumnInt(int i) const { return sqlite3_column_int64(s_, i); }
  std::string ColumnBytes(int i) const {
    const void* data = sqlite3_column_blob(s_, i);
    const int n = sqlite3_column_bytes(s_, i);
    return data == nullptr ? std::string() : std::string(static_cast<const char*>(data), n);
  }

 private:
  sqlite3_stmt* s_;
};

}  // namespace sluice::runtime::internal

#endif  // SLUICE_RUNTIME_STORE_SQLITE_STMT_H_
