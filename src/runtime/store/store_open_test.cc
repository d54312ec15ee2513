// OpenStore: every URI form of `--store`, and clear errors for the rest.
#include <memory>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "common/sim_env.h"
#include "runtime/store/etcd_store.h"
#include "runtime/store/memory_store.h"
#include "runtime/store/sqlite_store.h"
#include "runtime/store/testing/etcd_fixture.h"
#include "runtime/store/testing/store_factories.h"

namespace sluice::runtime {
namespace {

using ::testing::HasSubstr;

TEST(OpenStoreTest, OpensEachScheme) {
  common::ManualEnv env;
  StoreTempDir dir;
  absl::StatusOr<std::unique_ptr<Store>> memory = OpenStore("memory:", env);
  ASSERT_TRUE(memory.ok()) << memory.status();
  EXPECT_NE(dynamic_cast<MemoryStore*>(memory->get()), nullptr);
  for (const std::string& uri : {"sqlite:" + dir.path() + "/a.db", dir.path() + "/b.db"}) {
    absl::StatusOr<std::unique_ptr<Store>> s = OpenStore(uri, env);
    ASSERT_TRUE(s.ok()) << uri << ": " << s.status();
    EXPECT_NE(dynamic_cast<SqliteStore*>(s->get()), nullptr) << uri;
    ASSERT_TRUE((*s)->Put("k", "v").ok());
  }
  absl::StatusOr<std::unique_ptr<Store>> again = OpenStore("sqlite:" + dir.path() + "/a.db", env);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(*(*again)->Get("k"), "v");
}

TEST(OpenStoreTest, TheEmbeddedLeasesRunOnTheGivenClock) {
  common::ManualEnv env;
  absl::StatusOr<std::unique_ptr<Store>> s = OpenStore("memory:", env);
  ASSERT_TRUE(s.ok()) << s.status();
  absl::StatusOr<LeaseId> lease = (*s)->GrantLease(absl::Seconds(1));
  ASSERT_TRUE(lease.ok()) << lease.status();
  ASSERT_TRUE((*s)->PutLeased("k", "v", *lease).ok());
  env.Advance(absl::Seconds(2));
  EXPECT_EQ(*(*s)->Get("k"), std::nullopt);
}

TEST(OpenStoreTest, BadUrisAreInvalidArgumentNamingTheUri) {
  common::ManualEnv env;
  for (const char* uri : {"", "redis://h:1", "sqlite:", "etcd://", "etcd://h:1/x", "mem:"}) {
    absl::StatusOr<std::unique_ptr<Store>> s = OpenStore(uri, env);
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument) << uri << ": " << s.status();
    EXPECT_THAT(s.status().message(), HasSubstr(absl::StrCat("'", uri, "'")));
  }
}

TEST(OpenStoreTest, EtcdIsReachedOrUnavailable) {
  common::ManualEnv env;
  absl::StatusOr<std::unique_ptr<Store>> down = OpenStore("etcd://127.0.0.1:1", env);
  EXPECT_EQ(down.status().code(), absl::StatusCode::kUnavailable) << down.status();
  if (std::string missing = EtcdProcess::Missing(); !missing.empty())
    GTEST_SKIP() << missing;
  absl::StatusOr<EtcdProcess*> etcd = EtcdStoreFactory::Shared();
  ASSERT_TRUE(etcd.ok()) << etcd.status();
  absl::StatusOr<std::unique_ptr<Store>> s = OpenStore((*etcd)->uri() + "/", env);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_NE(dynamic_cast<EtcdStore*>(s->get()), nullptr);
}

}  // namespace
}  // namespace sluice::runtime
