// The controller across machines (issue 12) against FakeAgents and one shared memory store:
// LoadMerger's sums over gateway replicas; two controllers electing one leader (the follower
// answering 503 naming it), the follower taking over after the leader "crashes" and re-adopting
// every instance without restarting any; nodes joining through the store and a lost node's
// instances re-placed on the others.
#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gtest/gtest.h"

#include "nlohmann/json.hpp"
#include "runtime/cluster/membership.h"
#include "runtime/controller/controller_daemon.h"
#include "runtime/controller/load_merge.h"
#include "runtime/controller/testing/controller_fixture.h"
#include "runtime/controller/testing/fake_agent.h"
#include "runtime/http/http.h"
#include "runtime/store/memory_store.h"

namespace sluice::runtime {
namespace {

using nlohmann::json;

json Entry(const std::string& name, double rps, int queued) {
  return json{{"name", name}, {"rps", rps}, {"queued", queued}};
}

TEST(LoadMergerTest, SumsFreshGatewaysOncePerRoundOnThePacer) {
  LoadMerger m(absl::Seconds(3));
  const absl::Time t0 = absl::UnixEpoch() + absl::Hours(1);
  // One gateway: its own report, unchanged.
  auto only = m.Add("gw-a", json::array({Entry("f", 10, 1)}), t0);
  ASSERT_TRUE(only.has_value());
  EXPECT_DOUBLE_EQ((*only)[0]["rps"].get<double>(), 10);
  // A second gateway: its report waits for the pacer ("gw-a" sorts first)...
  EXPECT_FALSE(m.Add("gw-b", json::array({Entry("f", 5, 2), Entry("g", 1, 0)}),
                     t0 + absl::Milliseconds(400))
                   .has_value());
  // ...whose next report carries the sum.
  auto both = m.Add("gw-a", json::array({Entry("f", 12, 1)}), t0 + absl::Seconds(1));
  ASSERT_TRUE(both.has_value());
  std::map<std::string, json> by_name;
  for (const json& e : *both)
    by_name[e["name"].get<std::string>()] = e;
  EXPECT_DOUBLE_EQ(by_name["f"]["rps"].get<double>(), 17);
  EXPECT_EQ(by_name["f"]["queued"].get<int>(), 3);
  EXPECT_DOUBLE_EQ(by_name["g"]["rps"].get<double>(), 1);
  EXPECT_EQ(m.Fresh(t0 + absl::Seconds(1)), 2);
  // gw-a dies: once it is stale, gw-b paces alone.
  EXPECT_FALSE(m.Add("gw-b", json::array({Entry("f", 6, 0)}), t0 + absl::Seconds(2)).has_value());
  auto alone = m.Add("gw-b", json::array({Entry("f", 7, 0)}), t0 + absl::Seconds(5));
  ASSERT_TRUE(alone.has_value());
  EXPECT_DOUBLE_EQ((*alone)[0]["rps"].get<double>(), 7);
}

// Two controllers and two agents on one store; the agents are registered by the test through
// LeasedKey (what `sluice agent --join` does).
class ControllerClusterTest : public ControllerTest {
 protected:
  void SetUp() override {
    ControllerTest::SetUp();
    auto clock = http::EventLoop::Create();
    ASSERT_TRUE(clock.ok()) << clock.status();
    clock_ = *std::move(clock);
    store_ = std::make_unique<MemoryStore>(*clock_);
    options_.shared_store = store_.get();
    options_.discover_nodes = true;
    options_.elect = true;
    options_.leader_ttl = absl::Seconds(1);
    options_.cluster_tick = absl::Milliseconds(50);
    Register("n0", agent_->url());
  }
  void TearDown() override {
    other_.reset();
    daemon_.reset();
    keys_.clear();
    ControllerTest::TearDown();
    store_.reset();
  }
  void Register(const std::string& id, const std::string& url) {
    keys_[id] = std::make_unique<LeasedKey>(*store_, NodeKey(id),
                                            NodeRecordJson({id, url, 2, "emulated"}),
                                            absl::Seconds(1));
    ASSERT_TRUE(keys_[id]->Tick(clock_->Now()).ok());
  }
  // Keeps the registrations alive while waiting (the test is their agent).
  bool WaitRenewing(const std::function<bool()>& pred) {
    return WaitFor([&] {
      for (auto& [id, k] : keys_)
        (void)k->Tick(clock_->Now());
      return pred();
    });
  }
  http::Response CallAt(const std::string& at, const std::string& method,
                        const std::string& path) {
    http::Request req;
    req.method = method;
    req.target = path;
    auto r = http::Fetch(*http::Endpoint::Parse(at), std::move(req));
    if (r.ok())
      return *r;
    http::Response failed;
    failed.status = 0;
    return failed;
  }
  std::set<int64_t> InstanceIds(const std::string& name) {
    std::set<int64_t> ids;
    for (const json& i : Describe(name).value("instances", json::array()))
      ids.insert(i["id"].get<int64_t>());
    return ids;
  }

  std::unique_ptr<http::EventLoop> clock_;  // the memory store's lease clock
  std::unique_ptr<Store> store_;
  std::map<std::string, std::unique_ptr<LeasedKey>> keys_;
  std::unique_ptr<ControllerDaemon> other_;
};

TEST_F(ControllerClusterTest, FollowerNamesTheLeaderThenTakesOverWithoutRestarts) {
  options_.id = "ctl-a";
  StartDaemon();
  ASSERT_TRUE(WaitRenewing([&] { return daemon_->leading(); }));
  ControllerOptions b = options_;
  b.id = "ctl-b";
  auto started = ControllerDaemon::Start(b);
  ASSERT_TRUE(started.ok()) << started.status();
  other_ = *std::move(started);
  const std::string b_url = absl::StrCat("127.0.0.1:", other_->port());
  ASSERT_EQ(Deploy(InferenceSpec("f", 2, 2, "quota: {request: 0.5, limit: 0.5}\n")).status, 201);
  ASSERT_TRUE(WaitRenewing([&] { return Describe("f").value("state", "") == "ready"; }));
  ASSERT_TRUE(WaitRenewing([&] { return agent_->Live("f") == 2; }));
  const std::set<int64_t> before = InstanceIds("f");
  ASSERT_EQ(before.size(), 2u);
  const size_t started_before = agent_->instances().size();

  // The follower serves status, and answers a mutation 503 naming the leader.
  const http::Response leader = CallAt(b_url, "GET", "/admin/v1/leader");
  ASSERT_EQ(leader.status, 200);
  EXPECT_EQ(json::parse(leader.body)["role"], "follower");
  EXPECT_EQ(json::parse(leader.body)["leader"]["id"], "ctl-a");
  const http::Response refused = CallAt(b_url, "DELETE", "/admin/v1/functions/f");
  EXPECT_EQ(refused.status, 503);
  EXPECT_NE(refused.body.find("ctl-a"), std::string::npos) << refused.body;
  EXPECT_EQ(json::parse(refused.body)["leader"], url());

  // The leader crashes: the follower leads once the lease expires, within the 5 s bound.
  const absl::Time crash = absl::Now();
  daemon_->StopAsIfCrashed();
  ASSERT_TRUE(WaitRenewing([&] { return other_->leading(); }));
  EXPECT_LE(absl::Now() - crash, absl::Seconds(5));
  daemon_ = std::move(other_);  // Describe() & co. now ask the new leader
  ASSERT_TRUE(WaitRenewing([&] { return InstanceIds("f") == before; }));
  absl::SleepFor(absl::Milliseconds(300));  // a few node polls and reconciles
  EXPECT_EQ(InstanceIds("f"), before);
  EXPECT_EQ(agent_->instances().size(), started_before) << "an instance was started anew";
  EXPECT_TRUE(ServingDeletes().empty()) << "an instance was stopped";
  EXPECT_EQ(Describe("f")["state"], "ready");
}

// A leader whose lease is gone (revoked here; in life: a partition longer than the ttl) stops
// acting and calls on_deposed, which `sluice controller` turns into an exit for its supervisor.
TEST_F(ControllerClusterTest, ALeaderThatLosesItsLeaseStopsActingAndCallsOnDeposed) {
  auto deposed = std::make_shared<std::atomic<bool>>(false);
  options_.id = "ctl-a";
  options_.on_deposed = [deposed] { deposed->store(true); };
  StartDaemon();
  ASSERT_TRUE(WaitRenewing([&] { return daemon_->leading(); }));
  for (LeaseId lease = 1; lease <= 32; ++lease)  // the test's node keys re-register on Tick
    ASSERT_TRUE(store_->RevokeLease(lease).ok());
  ASSERT_TRUE(WaitRenewing([&] { return deposed->load(); }));
  EXPECT_FALSE(daemon_->leading());
  EXPECT_EQ(CallAt(url(), "DELETE", "/admin/v1/functions/f").status, 503);
}

TEST_F(ControllerClusterTest, ANodeJoinsAndALostNodesInstancesAreReplaced) {
  options_.elect = false;  // one controller; nodes still come from the store
  StartDaemon();
  ASSERT_EQ(Deploy(InferenceSpec("f", 2, 2, "quota: {request: 0.5, limit: 0.5}\n")).status, 201);
  ASSERT_TRUE(WaitRenewing([&] { return agent_->Live("f") == 2; }));
  // A second node joins: listed live, with no instance yet.
  auto second = FakeAgent::Start(2, int64_t{16} << 30, model_);
  ASSERT_TRUE(second.ok()) << second.status();
  std::unique_ptr<FakeAgent> n1 = *std::move(second);
  n1->set_controller(url());
  Register("n1", n1->url());
  auto node_state = [&](const std::string& id) {
    const json doc = Get("/admin/v1/nodes");
    for (const json& n : doc["nodes"]) {
      if (n["id"] == id)
        return n.value("state", "");
    }
    return std::string();
  };
  ASSERT_TRUE(WaitRenewing([&] { return node_state("n1") == "live"; }));
  // n0 dies (its registration stops being renewed): its instances move to n1.
  keys_.erase("n0");
  agent_.reset();
  ASSERT_TRUE(WaitRenewing([&] { return node_state("n0") == "lost"; }));
  ASSERT_TRUE(WaitRenewing([&] { return n1->Live("f") == 2; }));
  EXPECT_EQ(Describe("f")["state"], "ready");
  const std::string metrics = Call("GET", "/metrics").body;
  EXPECT_NE(metrics.find("sluice_controller_instances_replaced_total{function=\"f\"} 2"),
            std::string::npos)
      << metrics;
  n1.reset();
}

}  // namespace
}  // namespace sluice::runtime
