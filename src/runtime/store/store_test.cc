// Tests of the Store contract, run over SqliteStore, MemoryStore and EtcdStore alike (the
// cluster features are in cluster_store_test.cc), plus SqliteStore's persistence, migration,
// sharing of one file and error paths.
#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "runtime/store/memory_store.h"
#include "runtime/store/sqlite_store.h"
#include "runtime/store/testing/store_factories.h"

namespace sluice::runtime {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;

// A fresh directory under the test temp dir, removed with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    std::string tmpl = ::testing::TempDir() + "sluice_store_XXXXXX";
    path_ = mkdtemp(tmpl.data()) != nullptr ? tmpl : "";
  }
  ~TempDir() {
    if (!path_.empty())
      (void)std::system(("rm -rf '" + path_ + "'").c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

template <typename Factory>
class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (std::string why = factory_.Unavailable(); !why.empty())
      GTEST_SKIP() << why;
    store_ = factory_.Make(Factory::kDefaultHistory);
    ASSERT_NE(store_, nullptr);
  }
  Factory factory_;
  std::unique_ptr<Store> store_;
};
using Factories = ::testing::Types<SqliteStoreFactory, MemoryStoreFactory, EtcdStoreFactory>;
TYPED_TEST_SUITE(StoreTest, Factories);

TYPED_TEST(StoreTest, PutGetOverwriteDelete) {
  Store& s = *this->store_;
  EXPECT_EQ(*s.Get("fn/a"), std::nullopt);
  ASSERT_TRUE(s.Put("fn/a", "one").ok());
  EXPECT_EQ(*s.Get("fn/a"), "one");
  ASSERT_TRUE(s.Put("fn/a", "two").ok());
  EXPECT_EQ(*s.Get("fn/a"), "two");
  ASSERT_TRUE(s.Delete("fn/a").ok());
  EXPECT_EQ(*s.Get("fn/a"), std::nullopt);
  EXPECT_TRUE(s.Delete("fn/a").ok()) << "deleting an absent key is OK";
}

TYPED_TEST(StoreTest, BinaryValuesAndEmptyValueRoundTrip) {
  Store& s = *this->store_;
  const std::string bytes("a\0b\xff", 4);
  ASSERT_TRUE(s.Put("bin", bytes).ok());
  EXPECT_EQ(*s.Get("bin"), bytes);
  ASSERT_TRUE(s.Put("empty", "").ok());
  EXPECT_EQ(*s.Get("empty"), std::string());
}

TYPED_TEST(StoreTest, ListByPrefixIsSortedAndBounded) {
  Store& s = *this->store_;
  for (const char* k : {"fn/b", "fn/a", "fn0", "fm/z", "fn/c/x", "g"}) {
    ASSERT_TRUE(s.Put(k, absl::StrCat("v:", k)).ok());
  }
  EXPECT_THAT(*s.List("fn/"), ElementsAre(Pair("fn/a", "v:fn/a"), Pair("fn/b", "v:fn/b"),
                                          Pair("fn/c/x", "v:fn/c/x")));
  EXPECT_EQ(s.List("")->size(), 6u);
  EXPECT_EQ(s.List("")->front().first, "fm/z");
  EXPECT_TRUE(s.List("nope/")->empty());
}

TYPED_TEST(StoreTest, VersionsCountWritesAndRestartAfterDelete) {
  Store& s = *this->store_;
  ASSERT_TRUE(s.Put("k", "a").ok());
  EXPECT_EQ((*s.GetVersioned("k"))->version, 1);
  ASSERT_TRUE(s.Put("k", "b").ok());
  EXPECT_EQ((*s.GetVersioned("k"))->version, 2);
  EXPECT_EQ((*s.GetVersioned("k"))->value, "b");
  ASSERT_TRUE(s.Delete("k").ok());
  EXPECT_EQ(*s.GetVersioned("k"), std::nullopt);
  ASSERT_TRUE(s.Put("k", "c").ok());
  EXPECT_EQ((*s.GetVersioned("k"))->version, 1);
}

TYPED_TEST(StoreTest, PutIfCreatesUpdatesAndRejectsStaleVersions) {
  Store& s = *this->store_;
  EXPECT_EQ(*s.PutIf("k", 0, "created"), 1);
  absl::StatusOr<int64_t> again = s.PutIf("k", 0, "clobber");
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(again.status().message(), HasSubstr("expected version 0 but found 1"));
  EXPECT_EQ(*s.PutIf("k", 1, "updated"), 2);
  absl::StatusOr<int64_t> stale = s.PutIf("k", 1, "stale");
  EXPECT_EQ(stale.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(*s.Get("k"), "updated") << "a failed PutIf writes nothing";
  EXPECT_EQ(s.PutIf("absent", 3, "x").status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(*s.Get("absent"), std::nullopt);
  EXPECT_EQ(s.PutIf("k", -1, "x").status().code(), absl::StatusCode::kInvalidArgument);
  // The store stays usable after a rejected PutIf (no transaction left open).
  ASSERT_TRUE(s.Put("k", "after").ok());
  EXPECT_EQ((*s.GetVersioned("k"))->version, 3);
}

TYPED_TEST(StoreTest, EmptyKeyIsRejected) {
  Store& s = *this->store_;
  EXPECT_EQ(s.Put("", "v").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.Get("").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.Delete("").code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.PutIf("", 0, "v").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SqliteStoreTest, DataAndVersionsPersistAcrossReopen) {
  TempDir dir;
  const std::string path = dir.path() + "/registry.db";
  {
    absl::StatusOr<std::unique_ptr<SqliteStore>> s = SqliteStore::Open(path);
    ASSERT_TRUE(s.ok()) << s.status();
    ASSERT_TRUE((*s)->Put("fn/resnet", "spec-1").ok());
    ASSERT_TRUE((*s)->Put("fn/resnet", "spec-2").ok());
    ASSERT_TRUE((*s)->Put("fn/bert", "spec-b").ok());
    ASSERT_TRUE((*s)->Put("gone", "x").ok());
    ASSERT_TRUE((*s)->Delete("gone").ok());
  }
  absl::StatusOr<std::unique_ptr<SqliteStore>> s = SqliteStore::Open(path);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_THAT(*(*s)->List("fn/"),
              ElementsAre(Pair("fn/bert", "spec-b"), Pair("fn/resnet", "spec-2")));
  EXPECT_EQ((*(*s)->GetVersioned("fn/resnet"))->version, 2);
  EXPECT_EQ(*(*s)->Get("gone"), std::nullopt);
  EXPECT_EQ(*(*s)->PutIf("fn/resnet", 2, "spec-3"), 3);
}

TEST(SqliteStoreTest, UsesWalJournal) {
  TempDir dir;
  const std::string path = dir.path() + "/kv.db";
  {
    absl::StatusOr<std::unique_ptr<SqliteStore>> s = SqliteStore::Open(path);
    ASSERT_TRUE(s.ok()) << s.status();
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &stmt, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_STREQ(reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0)), "wal");
  sqlite3_finalize(stmt);
  sqlite3_close(db);
}

TEST(SqliteStoreTest, MissingDirectoryIsAClearError) {
  TempDir dir;
  const std::string path = dir.path() + "/no/such/dir/kv.db";
  absl::StatusOr<std::unique_ptr<SqliteStore>> s = SqliteStore::Open(path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.status().message(), HasSubstr(path));
  EXPECT_THAT(s.status().message(), HasSubstr("unable to open"));
}

TEST(SqliteStoreTest, DirectoryAsPathIsAClearError) {
  TempDir dir;
  absl::StatusOr<std::unique_ptr<SqliteStore>> s = SqliteStore::Open(dir.path());
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().code(), absl::StatusCode::kOk);
  EXPECT_THAT(s.status().message(), HasSubstr(dir.path()));
}

TEST(SqliteStoreTest, NonSqliteFileIsAClearError) {
  TempDir dir;
  const std::string path = dir.path() + "/not.db";
  {
    std::ofstream out(path, std::ios::binary);
    for (int i = 0; i < 256; ++i)
      out << "this is a function spec, not a database\n";
  }
  absl::StatusOr<std::unique_ptr<SqliteStore>> s = SqliteStore::Open(path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(s.status().message(), HasSubstr(path));
  EXPECT_THAT(s.status().message(), HasSubstr("not a database"));
}

TEST(SqliteStoreTest, ReadOnlyFileIsAClearError) {
  if (geteuid() == 0)
    GTEST_SKIP() << "root ignores file permissions";
  TempDir dir;
  const std::string path = dir.path() + "/ro.db";
  { ASSERT_TRUE(SqliteStore::Open(path).ok()); }
  ASSERT_EQ(chmod(path.c_str(), 0444), 0);
  absl::StatusOr<std::unique_ptr<SqliteStore>> s = SqliteStore::Open(path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_THAT(s.status().message(), HasSubstr(path));
}

TEST(SqliteStoreTest, TwoHandlesOnOneFileSeeEachOthersWritesThroughWatches) {
  SqliteStoreFactory factory;
  std::unique_ptr<Store> a = factory.Make(SqliteStoreFactory::kDefaultHistory);
  std::unique_ptr<SqliteStore> b = factory.OpenAgain();
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  absl::StatusOr<StoreSnapshot> snap = b->ListSnapshot("leader");
  ASSERT_TRUE(snap.ok()) << snap.status();
  absl::StatusOr<std::unique_ptr<StoreWatch>> watch = b->WatchPrefix("leader", snap->revision);
  ASSERT_TRUE(watch.ok()) << watch.status();
  absl::StatusOr<LeaseId> lease = a->GrantLease(absl::Seconds(2));
  ASSERT_TRUE(lease.ok()) << lease.status();
  ASSERT_TRUE(a->PutIfLeased("leader", 0, "controller-a", *lease).ok());
  EXPECT_EQ(b->PutIfLeased("leader", 0, "controller-b", 0).status().code(),
            absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<std::vector<WatchEvent>> events = (*watch)->Poll();
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].value, "controller-a");
  // The lease lives in the file: b sees it expire and the key go.
  factory.Advance(absl::Seconds(3));
  events = (*watch)->Poll();
  ASSERT_TRUE(events.ok()) << events.status();
  ASSERT_EQ(events->size(), 1u);
  EXPECT_EQ((*events)[0].type, WatchEvent::Type::kDelete);
  EXPECT_EQ(*b->PutIfLeased("leader", 0, "controller-b", 0), 1);
  EXPECT_EQ(*a->Get("leader"), "controller-b");
  EXPECT_EQ(*a->Revision(), *b->Revision());
}

TEST(SqliteStoreTest, MigratesAFileWrittenBeforeLeasesAndWatches) {
  TempDir dir;
  const std::string path = dir.path() + "/old.db";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "CREATE TABLE kv(key TEXT PRIMARY KEY, value BLOB, version INTEGER NOT "
                         "NULL); INSERT INTO kv VALUES('fn/old', 'spec', 3);",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  absl::StatusOr<std::unique_ptr<SqliteStore>> s = SqliteStore::Open(path);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ((*(*s)->GetVersioned("fn/old"))->version, 3);
  EXPECT_EQ(*(*s)->Revision(), 0);
  absl::StatusOr<LeaseId> lease = (*s)->GrantLease(absl::Seconds(10));
  ASSERT_TRUE(lease.ok()) << lease.status();
  EXPECT_EQ(*(*s)->PutLeased("fn/old", "spec2", *lease), 4);
  ASSERT_TRUE((*s)->RevokeLease(*lease).ok());
  EXPECT_EQ(*(*s)->Get("fn/old"), std::nullopt);
  s->reset();
  EXPECT_TRUE(SqliteStore::Open(path).ok()) << "a migrated file opens again";
}

}  // namespace
}  // namespace sluice::runtime
