// Memory-only idle and demotion on the platform, driven by the controller under the `sluice`
// policy set (issue 13; controller_park.cc): an idle function's instance is parked on its agent
// after park_after_s, a request wakes it (as the token server does) and is answered, the
// controller parks it again once idle, and after the keep-alive the TailScaler demotes it: the
// instance is stopped and nothing is evicted from the node's parameter store, so the next wake
// starts a new instance (from the host cache through the pool: the agent's part, tested by
// tests/e2e/cold_start_e2e_test.cc). Also: a spec without `policy:` gets the controller's
// default_policy, and an unknown default is refused.
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "runtime/controller/agent_api.h"
#include "runtime/controller/testing/controller_fixture.h"

namespace sluice::runtime {
namespace {

using ::testing::HasSubstr;

class ControllerParkTest : public ControllerTest {
 protected:
  // The single serving instance of `name` the controller lists, or null.
  json Instance(const std::string& name) {
    const json d = Describe(name);
    for (const json& i : d.value("instances", json::array())) {
      if (i.value("state", "") != "draining")
        return i;
    }
    return json();
  }
  // Reports `rps` every 40 ms until `pred` holds (bounded, like WaitFor).
  bool ReportUntil(const std::string& name, double rps, const std::function<bool()>& pred) {
    for (int k = 0; k < 400; ++k) {
      ReportLoad(name, rps);
      if (pred())
        return true;
      absl::SleepFor(absl::Milliseconds(40));
    }
    return false;
  }
  int Parks(int64_t id, bool parked) {
    int n = 0;
    for (const FakePark& p : agent_->park_log())
      n += p.id == id && p.parked == parked ? 1 : 0;
    return n;
  }
  bool Deleted(int64_t id) {
    for (const FakeDelete& d : ServingDeletes()) {
      if (d.id == id)
        return true;
    }
    return false;
  }
};

constexpr char kTail[] =
    "policy: sluice\n"
    "policy_params: {park_after_s: 0.3, keep_alive_s: 1.5, prewarm: false, window_s: 1}\n";

TEST_F(ControllerParkTest, IdleInstanceParksWakesOnARequestAndIsDemotedAfterTheKeepAlive) {
  StartDaemon();
  agent_->SetParamsModels({"/models/m"});
  ASSERT_EQ(Deploy(InferenceSpec("tail", 0, 2, kTail)).status, 201);
  ASSERT_TRUE(WaitState("tail", "ready"));
  EXPECT_EQ(Describe("tail").value("scaler", ""), "sluice-tail");
  // Load: one instance starts and keeps its share while requests arrive.
  ASSERT_TRUE(
      ReportUntil("tail", 5, [&] { return Instance("tail").value("state", "") == "ready"; }));
  const int64_t id = Instance("tail")["id"].get<int64_t>();
  EXPECT_EQ(Parks(id, true), 0) << "parked while busy";

  // Idle past park_after_s: parked on its agent, still resident (not stopped).
  const absl::Time idle_from = absl::Now();
  ASSERT_TRUE(ReportUntil("tail", 0, [&] { return Parks(id, true) >= 1; }));
  EXPECT_GE(absl::Now() - idle_from, absl::Milliseconds(250));
  EXPECT_FALSE(Deleted(id));
  ASSERT_TRUE(WaitFor([&] { return Instance("tail").value("parked", false); }));

  // A request reaches the parked instance: the agent unparks it and it answers.
  const std::string url = Instance("tail").value("url", "");
  absl::StatusOr<http::Response> r =
      http::Fetch(*http::Endpoint::Parse(url), AgentRequest("POST", "/infer", "{}"));
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->status, 200);
  ReportLoad("tail", 5);  // the gateway reports that arrival
  ASSERT_TRUE(WaitFor([&] { return !Instance("tail").value("parked", true); }));
  // Idle again: parked again (the controller learns from the agent that demand woke it).
  ASSERT_TRUE(ReportUntil("tail", 0, [&] { return Parks(id, true) >= 2; }));
  EXPECT_FALSE(Deleted(id));

  // Idle past the keep-alive: demoted, i.e. stopped, with nothing evicted from the store.
  ASSERT_TRUE(ReportUntil("tail", 0, [&] { return Deleted(id); }));
  EXPECT_TRUE(agent_->params_deletes().empty());
  ASSERT_TRUE(WaitFor([&] { return Instance("tail").is_null(); }));

  // The next request wakes the function from zero: a new instance on the node that holds it.
  const http::Response w = Call("POST", "/internal/v1/wake", json{{"name", "tail"}}.dump());
  ASSERT_EQ(w.status, 200) << w.body;
  EXPECT_TRUE(json::parse(w.body).value("started", false)) << w.body;
  ASSERT_TRUE(
      ReportUntil("tail", 5, [&] { return Instance("tail").value("state", "") == "ready"; }));
  EXPECT_NE(Instance("tail")["id"].get<int64_t>(), id);
  EXPECT_EQ(agent_->Live("tail"), 1);
}

TEST_F(ControllerParkTest, ASpecWithoutPolicyGetsTheDefaultPolicyAndDiluStaysDilu) {
  options_.default_policy = "sluice";
  StartDaemon();
  ASSERT_EQ(Deploy(InferenceSpec("plain", 1, 2)).status, 201);
  ASSERT_EQ(Deploy(InferenceSpec("old", 1, 2, "policy: dilu\n")).status, 201);
  ASSERT_TRUE(WaitState("plain", "ready"));
  ASSERT_TRUE(WaitState("old", "ready"));
  EXPECT_EQ(Describe("plain").value("policy", ""), "sluice");
  EXPECT_EQ(Describe("plain").value("scaler", ""), "sluice-tail");
  EXPECT_EQ(Describe("old").value("policy", ""), "dilu");
  EXPECT_NE(Describe("old").value("scaler", ""), "sluice-tail");
  // Deploying the same spec again is idempotent (the default is resolved the same way).
  EXPECT_EQ(Deploy(InferenceSpec("plain", 1, 2)).status, 200);
  // A Dilu-only param is checked against the default policy, which passes Dilu's keys through.
  EXPECT_EQ(Deploy(InferenceSpec("p2", 1, 2, "policy_params: {window_s: 5}\n")).status, 201);
}

TEST_F(ControllerParkTest, AnUnknownDefaultPolicyIsRefusedNamingTheOption) {
  options_.default_policy = "nope";
  absl::StatusOr<std::unique_ptr<ControllerDaemon>> d = ControllerDaemon::Start(options_);
  ASSERT_FALSE(d.ok());
  EXPECT_THAT(std::string(d.status().message()),
              HasSubstr("default_policy: unknown policy 'nope'"));
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("sluice"));
}

}  // namespace
}  // namespace sluice::runtime
