// NodeJoin against a SQLite cluster store shared with the test (what a controller on the same
// file sees): the node's record appears under /sluice/nodes/<id>, survives several lease ttls
// while the agent's loop renews it, and goes at once on a clean stop; a bad URI or ttl is an
// error naming it.
#include <filesystem>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

#include "runtime/agent/node_join.h"
#include "runtime/cluster/membership.h"
#include "runtime/http/http.h"
#include "runtime/store/store.h"

namespace sluice::runtime {
namespace {

TEST(NodeJoinTest, RegistersRenewsAndLeavesOnStop) {
  const std::string dir = ::testing::TempDir() + "/node_join_test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string uri = "sqlite:" + dir + "/cluster.db";
  auto loop = http::EventLoop::Create();
  ASSERT_TRUE(loop.ok()) << loop.status();
  auto view = OpenStore(uri, **loop);  // what a controller reads
  ASSERT_TRUE(view.ok()) << view.status();
  auto join = NodeJoin::Start(uri, **loop, {"n7", "127.0.0.1:7072", 2, "emulated"},
                              absl::Seconds(1));
  ASSERT_TRUE(join.ok()) << join.status();
  auto record = [&]() -> std::string {
    auto v = (*view)->Get(NodeKey("n7"));
    return v.ok() && v->has_value() ? **v : "";
  };
  ASSERT_FALSE(record().empty());
  auto parsed = ParseNodeRecord(record());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->address, "127.0.0.1:7072");
  EXPECT_EQ(parsed->gpus, 2);
  absl::SleepFor(absl::Milliseconds(2500));  // 2.5 ttls: alive only if renewed
  EXPECT_FALSE(record().empty());
  (*loop)->Stop();
  join->reset();  // a clean stop revokes the lease
  EXPECT_TRUE(record().empty());
  std::filesystem::remove_all(dir);
}

TEST(NodeJoinTest, BadUriAndTtlAreNamed) {
  auto loop = http::EventLoop::Create();
  ASSERT_TRUE(loop.ok());
  auto bad_uri = NodeJoin::Start("nosuch://x", **loop, {"n", "h:1", 1, ""}, absl::Seconds(3));
  ASSERT_FALSE(bad_uri.ok());
  EXPECT_NE(bad_uri.status().message().find("nosuch://x"), std::string::npos);
  auto bad_ttl = NodeJoin::Start("memory:", **loop, {"n", "h:1", 1, ""}, absl::Milliseconds(10));
  ASSERT_FALSE(bad_ttl.ok());
  EXPECT_NE(bad_ttl.status().message().find("node_ttl"), std::string::npos);
}

}  // namespace
}  // namespace sluice::runtime
