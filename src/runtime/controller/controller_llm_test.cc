// End-to-end tests of the controller's P/D pools against FakeAgent (whose instances answer
// /sluice/v1/stats from counters the test sets and /sluice/v1/role): pools started with roles,
// roles in the routes, the LLM autoscaler's mutation under a decode-heavy load, and the operator
// mutate API with its errors. Waits poll with a generous bound.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

#include "nlohmann/json.hpp"
#include "runtime/controller/controller_daemon.h"
#include "runtime/controller/testing/controller_fixture.h"
#include "runtime/controller/testing/fake_agent.h"

namespace sluice::runtime {
namespace {

using nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string PdSpec(const std::string& name, int prefill, int decode, int max) {
  return absl::StrCat("name: ", name, R"(
kind: llm
command: ["./llm", "--model", "llama2-7b"]
model: {path: none, name: llama2-7b}
slo_ms: 450
memory_gib: 1
autoscaling: {min: 0, max: )",
                      max, "}\nllm: {disaggregated: true, prefill: ", prefill,
                      ", decode: ", decode, "}\n");
}

class ControllerLlmTest : public ControllerTest {
 protected:
  void SetUp() override {
    ControllerTest::SetUp();
    options_.llm.poll = absl::Milliseconds(40);
    options_.llm.window = absl::Milliseconds(400);
    options_.llm.scale_down_timeout = absl::Seconds(600);  // no scale-in behind the tests' back
  }
  // Role -> routed instance ids of `name` (ready or starting).
  std::map<std::string, std::vector<int64_t>> RoutedRoles(const std::string& name) {
    std::map<std::string, std::vector<int64_t>> out;
    const json r = Route(name);
    if (r.is_null())
      return out;
    for (const json& i : r["instances"])
      out[i.value("role", "")].push_back(i["id"].get<int64_t>());
    return out;
  }
  // Waits until exactly `prefill` and `decode` instances are routed, all ready.
  bool WaitPools(const std::string& name, size_t prefill, size_t decode) {
    return WaitFor([&] {
      auto roles = RoutedRoles(name);
      bool ready = true;
      for (const json& i : Route(name).value("instances", json::array()))
        ready = ready && i["state"] == "ready";
      return ready && roles["prefill"].size() == prefill && roles["decode"].size() == decode &&
             roles[""].empty();
    });
  }
  FakeInstance Instance(int64_t id) {
    for (const FakeInstance& i : agent_->instances()) {
      if (i.id == id)
        return i;
    }
    return FakeInstance();
  }
  http::Response Mutate(const std::string& name, const std::string& body) {
    return Call("POST", "/admin/v1/functions/" + name + "/mutate", body);
  }
};

TEST_F(ControllerLlmTest, StartsBothPoolsWithRolesAndPublishesThemInTheRoutes) {
  StartDaemon();
  ASSERT_EQ(Deploy(PdSpec("chat", 2, 1, 4)).status, 201);
  ASSERT_TRUE(WaitState("chat", "ready")) << Describe("chat").dump();
  ASSERT_TRUE(WaitPools("chat", 2, 1)) << Route("chat").dump();
  for (const auto& [role, ids] : RoutedRoles("chat")) {
    for (int64_t id : ids) {
      const FakeInstance i = Instance(id);
      EXPECT_THAT(i.command, ElementsAre("./llm", "--model", "llama2-7b", "--role", role));
      EXPECT_EQ(i.role, role);  // from $SLUICE_LLM_ROLE
    }
  }
  const json d = Describe("chat");
  EXPECT_EQ(d["llm"]["prefill_desired"], 2);
  EXPECT_EQ(d["llm"]["decode_desired"], 1);
  EXPECT_EQ(d["llm"]["autoscaler"], true);
  EXPECT_GT(d["llm"]["decode_tokens_per_s_per_instance"].get<double>(), 0);
  EXPECT_EQ(d["scaler"], "");  // no LazyScaler for the P/D function
}

TEST_F(ControllerLlmTest, DecodeHeavyLoadMutatesAPrefillInstanceToDecode) {
  options_.llm.prefill_tokens_per_s = 10000;
  options_.llm.decode_tokens_per_s = 1000;
  StartDaemon();
  ASSERT_EQ(Deploy(PdSpec("chat", 2, 1, 3)).status, 201);
  ASSERT_TRUE(WaitState("chat", "ready"));
  ASSERT_TRUE(WaitPools("chat", 2, 1)) << Route("chat").dump();
  const int64_t decode = RoutedRoles("chat")["decode"][0];
  const std::vector<int64_t> prefill = RoutedRoles("chat")["prefill"];
  // ~5,000 tokens/s on the one decode instance (bound 1,000): the decode pool wants 3 (its
  // max); the idle prefill pool spares one instance, which mutates; the third starts fresh.
  int64_t generated = 0;
  ASSERT_TRUE(WaitFor([&] {
    generated += 50;
    agent_->SetLlmStats(decode, 0, generated, 10);
    return RoutedRoles("chat")["decode"].size() == 3;
  })) << Route("chat").dump();
  const auto roles = RoutedRoles("chat");
  ASSERT_EQ(roles.at("prefill").size(), 1u);
  int mutated = 0;
  for (int64_t id : prefill) {
    const FakeInstance i = Instance(id);
    if (i.role_switches == 0)
      continue;
    ++mutated;
    EXPECT_EQ(i.role, "decode");
    EXPECT_THAT(roles.at("decode"), ::testing::Contains(id));  // republished as decode
  }
  EXPECT_EQ(mutated, 1);
  EXPECT_EQ(Describe("chat")["llm"]["mutations"], 1);
  // The fresh decode instance started with --role decode.
  for (int64_t id : roles.at("decode")) {
    if (id != decode && Instance(id).role_switches == 0) {
      EXPECT_EQ(Instance(id).command.back(), "decode");
    }
  }
}

TEST_F(ControllerLlmTest, OperatorMutateSwitchesARoleAndRejectsBadInput) {
  options_.llm.autoscale = false;
  StartDaemon();
  ASSERT_EQ(Deploy(InferenceSpec("plain", 1, 1)).status, 201);
  ASSERT_EQ(Deploy(PdSpec("chat", 2, 1, 4)).status, 201);
  ASSERT_TRUE(WaitState("chat", "ready"));
  ASSERT_TRUE(WaitPools("chat", 2, 1)) << Route("chat").dump();
  EXPECT_FALSE(Describe("chat")["llm"]["autoscaler"].get<bool>());
  const int64_t p = RoutedRoles("chat")["prefill"][0];
  const int64_t d = RoutedRoles("chat")["decode"][0];
  const std::string body = json{{"instance", p}, {"role", "decode"}}.dump();

  EXPECT_EQ(Mutate("nope", body).status, 404);
  const http::Response plain = Mutate("plain", body);
  EXPECT_EQ(plain.status, 400);
  EXPECT_THAT(plain.body, HasSubstr("not a disaggregated LLM function"));
  EXPECT_THAT(Mutate("chat", "{").body, HasSubstr("body"));
  EXPECT_THAT(Mutate("chat", R"({"role": "decode"})").body, HasSubstr("'instance'"));
  EXPECT_THAT(Mutate("chat", json{{"instance", p}, {"role", "colocated"}}.dump()).body,
              HasSubstr("'role'"));
  EXPECT_EQ(Mutate("chat", json{{"instance", 9999}, {"role", "decode"}}.dump()).status, 404);
  const http::Response same = Mutate("chat", json{{"instance", d}, {"role", "decode"}}.dump());
  EXPECT_EQ(same.status, 400);
  EXPECT_THAT(same.body, HasSubstr("already decode"));

  const http::Response ok = Mutate("chat", body);
  ASSERT_EQ(ok.status, 200) << ok.body;
  EXPECT_EQ(json::parse(ok.body)["previous"], "prefill");
  EXPECT_EQ(Instance(p).role, "decode");
  ASSERT_TRUE(WaitPools("chat", 1, 2)) << Route("chat").dump();  // no pool restarted it
  EXPECT_EQ(Describe("chat")["llm"]["decode_desired"], 2);

  // The instance refuses (e.g. decode -> prefill while holding KV): 409, the old role stays.
  agent_->SetRefuseRole(d, true);
  const http::Response refused = Mutate("chat", json{{"instance", d}, {"role", "prefill"}}.dump());
  EXPECT_EQ(refused.status, 409);
  EXPECT_THAT(refused.body, HasSubstr("holding KV"));
  EXPECT_TRUE(WaitPools("chat", 1, 2)) << Route("chat").dump();
  EXPECT_EQ(Describe("chat")["llm"]["prefill_desired"], 1);
}

}  // namespace
}  // namespace sluice::runtime
