// The backends of the typed store test suites (cluster_store_test.cc): each factory makes fresh
// stores, moves their lease clock and forces compaction. Embedded backends run on a ManualEnv;
// etcd (EtcdStoreFactory, etcd_fixture.h) on real time. Test-only; not thread-safe.
#ifndef SLUICE_RUNTIME_STORE_TESTING_STORE_FACTORIES_H_
#define SLUICE_RUNTIME_STORE_TESTING_STORE_FACTORIES_H_

#include <stdlib.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/time/time.h"
#include "gtest/gtest.h"

#include "common/sim_env.h"
#include "runtime/store/memory_store.h"
#include "runtime/store/sqlite_store.h"

namespace sluice::runtime {

// True once `condition` holds. With `real_time` it is retried every 20 ms for up to 5 s (etcd
// delivers watch events and expires leases asynchronously); otherwise it is asked once.
inline bool EventuallyTrue(bool real_time, const std::function<bool()>& condition) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!condition()) {
    if (!real_time || std::chrono::steady_clock::now() > deadline)
      return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// A fresh directory under the test temp dir, removed with its contents on destruction.
class StoreTempDir {
 public:
  StoreTempDir() {
    std::string tmpl = ::testing::TempDir() + "sluice_store_XXXXXX";
    path_ = mkdtemp(tmpl.data()) != nullptr ? tmpl : "";
  }
  ~StoreTempDir() {
    if (!path_.empty())
      (void)std::system(("rm -rf '" + path_ + "'").c_str());
  }
  StoreTempDir(const StoreTempDir&) = delete;
  StoreTempDir& operator=(const StoreTempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

struct MemoryStoreFactory {
  static constexpr bool kRealTime = false;
  static constexpr int64_t kDefaultHistory = MemoryStore::kDefaultHistory;
  std::string Unavailable() const { return ""; }
  std::unique_ptr<Store> Make(int64_t history) {
    return std::make_unique<MemoryStore>(env, history);
  }
  void Advance(absl::Duration d) { env.Advance(d); }
  void Compact(Store&) {}  // the history bound given to Make compacts
  common::ManualEnv env;
};

struct SqliteStoreFactory {
  static constexpr bool kRealTime = false;
  static constexpr int64_t kDefaultHistory = SqliteStoreOptions().history;
  std::string Unavailable() const { return ""; }
  // Each call opens a new file; OpenAgain opens another handle on the latest one.
  std::unique_ptr<Store> Make(int64_t history) {
    path = dir.path() + "/kv" + std::to_string(++files) + ".db";
    options.env = &env;
    options.history = history;
    return OpenAgain();
  }
  std::unique_ptr<SqliteStore> OpenAgain() {
    absl::StatusOr<std::unique_ptr<SqliteStore>> s = SqliteStore::Open(path, options);
    EXPECT_TRUE(s.ok()) << s.status();
    return s.ok() ? std::move(*s) : nullptr;
  }
  void Advance(absl::Duration d) { env.Advance(d); }
  void Compact(Store&) {}
  common::ManualEnv env;
  StoreTempDir dir;
  SqliteStoreOptions options;
  std::string path;
  int files = 0;
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_STORE_TESTING_STORE_FACTORIES_H_
