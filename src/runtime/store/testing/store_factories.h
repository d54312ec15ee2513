// The backends of the typed store test suites (cluster_store_test.cc): each factory makes fresh
// stores, moves their lease clock and forces compaction. Embedded backends run on a ManualEnv;
// etcd (EtcdStoreFactory, a real etcd from etcd_fixture.h) on real time. Test-only; not
// thread-safe.
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
#include "runtime/store/etcd_store.h"
#include "runtime/store/memory_store.h"
#include "runtime/store/sqlite_store.h"
#include "runtime/store/testing/etcd_fixture.h"

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

// One etcd per test binary, started on first use and killed at exit. Each Make() empties it.
struct EtcdStoreFactory {
  static constexpr bool kRealTime = true;
  static constexpr int64_t kDefaultHistory = 0;  // etcd keeps history until Compact
  static absl::StatusOr<EtcdProcess*> Shared() {
    static absl::StatusOr<std::unique_ptr<EtcdProcess>>* etcd =
        new absl::StatusOr<std::unique_ptr<EtcdProcess>>(EtcdProcess::Start());
    static const bool cleanup = [] {
      std::atexit([] { etcd->value().reset(); });
      return true;
    }();
    (void)cleanup;
    if (!etcd->ok())
      return etcd->status();
    return etcd->value().get();
  }
  std::string Unavailable() const {
    if (std::string missing = EtcdProcess::Missing(); !missing.empty())
      return missing;
    absl::StatusOr<EtcdProcess*> etcd = Shared();
    return etcd.ok() ? "" : std::string(etcd.status().message());
  }
  std::unique_ptr<Store> Make(int64_t /*history*/) {
    absl::StatusOr<EtcdProcess*> etcd = Shared();
    EXPECT_TRUE(etcd.ok()) << etcd.status();
    if (!etcd.ok())
      return nullptr;
    absl::StatusOr<std::unique_ptr<EtcdStore>> s = EtcdStore::Open((*etcd)->endpoint());
    EXPECT_TRUE(s.ok()) << s.status();
    if (!s.ok())
      return nullptr;
    absl::StatusOr<std::vector<std::pair<std::string, std::string>>> all = (*s)->List("");
    EXPECT_TRUE(all.ok()) << all.status();
    if (all.ok()) {
      for (const auto& kv : *all)
        EXPECT_TRUE((*s)->Delete(kv.first).ok());
    }
    return std::move(*s);
  }
  void Advance(absl::Duration d) { std::this_thread::sleep_for(absl::ToChronoNanoseconds(d)); }
  void Compact(Store& s) {
    absl::StatusOr<int64_t> revision = s.Revision();
    ASSERT_TRUE(revision.ok()) << revision.status();
    ASSERT_TRUE(static_cast<EtcdStore&>(s).Compact(*revision).ok());
  }
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_STORE_TESTING_STORE_FACTORIES_H_
