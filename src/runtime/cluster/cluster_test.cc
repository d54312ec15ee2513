// Membership and leadership over the memory backend with a hand-advanced clock (the store's
// lease clock): LeasedKey registration/renewal/re-registration, PrefixMirror's changes,
// LeaderElection's campaign, renewal, takeover after a crash and resignation.
#include <memory>
#include <string>

#include "gtest/gtest.h"

#include "common/sim_env.h"
#include "runtime/cluster/leader_election.h"
#include "runtime/cluster/membership.h"
#include "runtime/cluster/prefix_mirror.h"
#include "runtime/store/memory_store.h"

namespace sluice::runtime {
namespace {

class ClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::make_unique<MemoryStore>(env_);
  }
  bool Has(const std::string& key) {
    auto v = store_->Get(key);
    return v.ok() && v->has_value();
  }
  // Advances the clock in `step`s, ticking `e` each time, until it leads or `limit` passes;
  // returns the time it took (limit + step when it never led).
  absl::Duration TickUntilLeading(LeaderElection& e, absl::Duration limit,
                                  absl::Duration step = absl::Milliseconds(100)) {
    const absl::Time start = env_.Now();
    while (env_.Now() - start <= limit) {
      if (e.Tick(env_.Now()) == LeaderElection::Change::kElected)
        return env_.Now() - start;
      env_.Advance(step);
    }
    return limit + step;
  }

  common::ManualEnv env_;
  std::unique_ptr<Store> store_;
};

TEST(MembershipRecordTest, NodeRecordRoundTripsAndNamesBadFields) {
  const NodeRecord n{"gpu-a", "10.0.0.5:7072", 8, "cuda"};
  auto back = ParseNodeRecord(NodeRecordJson(n));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->id, "gpu-a");
  EXPECT_EQ(back->address, "10.0.0.5:7072");
  EXPECT_EQ(back->gpus, 8);
  EXPECT_EQ(NodeKey("gpu-a"), "/sluice/nodes/gpu-a");
  auto no_address = ParseNodeRecord(R"({"id":"x"})");
  ASSERT_FALSE(no_address.ok());
  EXPECT_NE(no_address.status().message().find("'address'"), std::string::npos);
  auto bad_gpus = ParseNodeRecord(R"({"id":"x","address":"h:1","gpus":-1})");
  ASSERT_FALSE(bad_gpus.ok());
  EXPECT_NE(bad_gpus.status().message().find("'gpus'"), std::string::npos);
  EXPECT_FALSE(ParseNodeRecord("not json").ok());
  EXPECT_FALSE(ParseLeaderRecord(R"({"id":""})").ok());
}

TEST_F(ClusterTest, LeasedKeyRegistersRenewsAndComesBackAfterExpiry) {
  auto key = std::make_unique<LeasedKey>(*store_, NodeKey("n1"), "v", absl::Seconds(3));
  ASSERT_TRUE(key->Tick(env_.Now()).ok());
  EXPECT_TRUE(Has(NodeKey("n1")));
  // Renewed every second for 10 s: the key never expires.
  for (int i = 0; i < 10; ++i) {
    env_.Advance(absl::Seconds(1));
    ASSERT_TRUE(key->Tick(env_.Now()).ok());
    EXPECT_TRUE(Has(NodeKey("n1"))) << "after " << i + 1 << " s";
  }
  // The process stalls past the ttl: the key goes with its lease...
  env_.Advance(absl::Seconds(4));
  EXPECT_FALSE(Has(NodeKey("n1")));
  // ...and the next round puts it back under a new lease.
  ASSERT_TRUE(key->Tick(env_.Now()).ok());
  EXPECT_TRUE(Has(NodeKey("n1")));
  EXPECT_EQ(key->reregistrations(), 1);
  key.reset();  // a clean stop revokes: the key goes at once
  EXPECT_FALSE(Has(NodeKey("n1")));
}

TEST_F(ClusterTest, PrefixMirrorReportsJoinsAndLeaves) {
  PrefixMirror mirror(*store_, kNodesPrefix);
  auto a = std::make_unique<LeasedKey>(*store_, NodeKey("a"), "A", absl::Seconds(2));
  ASSERT_TRUE(a->Tick(env_.Now()).ok());
  auto first = mirror.Sync();
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_EQ(first->size(), 1u);
  EXPECT_EQ((*first)[0].key, NodeKey("a"));
  EXPECT_EQ((*first)[0].value, "A");
  LeasedKey b(*store_, NodeKey("b"), "B", absl::Seconds(2));
  ASSERT_TRUE(b.Tick(env_.Now()).ok());
  ASSERT_TRUE(store_->Put("/sluice/other", "x").ok());  // outside the prefix
  auto second = mirror.Sync();
  ASSERT_TRUE(second.ok());
  ASSERT_EQ(second->size(), 1u);
  EXPECT_EQ((*second)[0].key, NodeKey("b"));
  a.reset();  // `a` stops cleanly: its lease is revoked and its key deleted
  auto third = mirror.Sync();
  ASSERT_TRUE(third.ok());
  ASSERT_EQ(third->size(), 1u);
  EXPECT_EQ((*third)[0].key, NodeKey("a"));
  EXPECT_FALSE((*third)[0].value.has_value());
  EXPECT_EQ(mirror.items().size(), 1u);
  EXPECT_EQ(mirror.lists(), 1);
}

TEST_F(ClusterTest, OneLeaderAndTheFollowerKnowsIt) {
  LeaderElection a(*store_, {"a", "h:1"}, absl::Seconds(2));
  LeaderElection b(*store_, {"b", "h:2"}, absl::Seconds(2));
  EXPECT_EQ(a.Tick(env_.Now()), LeaderElection::Change::kElected);
  EXPECT_EQ(b.Tick(env_.Now()), LeaderElection::Change::kNone);
  EXPECT_TRUE(a.leading());
  EXPECT_FALSE(b.leading());
  ASSERT_TRUE(b.leader().has_value());
  EXPECT_EQ(b.leader()->id, "a");
  EXPECT_EQ(b.leader()->address, "h:1");
  // The leader renews: for 20 s of ticks nobody else leads.
  for (int i = 0; i < 200; ++i) {
    env_.Advance(absl::Milliseconds(100));
    EXPECT_EQ(a.Tick(env_.Now()), LeaderElection::Change::kNone);
    EXPECT_EQ(b.Tick(env_.Now()), LeaderElection::Change::kNone);
  }
  EXPECT_TRUE(a.leading());
}

TEST_F(ClusterTest, FollowerTakesOverWithinTtlOfACrash) {
  auto a = std::make_unique<LeaderElection>(*store_, LeaderRecord{"a", "h:1"}, absl::Seconds(2));
  LeaderElection b(*store_, {"b", "h:2"}, absl::Seconds(2));
  ASSERT_EQ(a->Tick(env_.Now()), LeaderElection::Change::kElected);
  ASSERT_EQ(b.Tick(env_.Now()), LeaderElection::Change::kNone);
  a->Abandon();  // crashes: no resignation, the lease runs out
  const absl::Duration took = TickUntilLeading(b, absl::Seconds(10));
  EXPECT_LE(took, absl::Seconds(2) + absl::Milliseconds(200));
  EXPECT_GE(took, absl::Seconds(1));  // not before the lease could have expired
  EXPECT_TRUE(b.leading());
  ASSERT_TRUE(b.leader().has_value());
  EXPECT_EQ(b.leader()->id, "b");
}

TEST_F(ClusterTest, ResignationHandsOverAtOnceAndAStaleLeaderIsDeposed) {
  LeaderElection a(*store_, {"a", "h:1"}, absl::Seconds(2));
  LeaderElection b(*store_, {"b", "h:2"}, absl::Seconds(2));
  ASSERT_EQ(a.Tick(env_.Now()), LeaderElection::Change::kElected);
  ASSERT_EQ(b.Tick(env_.Now()), LeaderElection::Change::kNone);
  a.Resign();
  EXPECT_EQ(b.Tick(env_.Now()), LeaderElection::Change::kElected);
  // `a` campaigns again but `b` leads; then `b` stalls past its ttl without renewing.
  EXPECT_EQ(a.Tick(env_.Now()), LeaderElection::Change::kNone);
  env_.Advance(absl::Seconds(3));
  EXPECT_EQ(b.Tick(env_.Now()), LeaderElection::Change::kDeposed);
  EXPECT_FALSE(b.leading());
  EXPECT_EQ(a.Tick(env_.Now()), LeaderElection::Change::kElected);
}

}  // namespace
}  // namespace sluice::runtime
