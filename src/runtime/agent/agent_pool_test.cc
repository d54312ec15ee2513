// The agent's fast cold-start path on the emulated device (label emulated): the pre-started
// process pool hands a real SDK function (sluice-example-classifier) its instance, the
// parameters come from the node's host-memory store on the second start, and an instance can
// be parked (memory-only idle) over the agent API. No wall-clock assertions: the timed
// scale-from-zero check is tests/e2e/cold_start_e2e_test.cc.
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runtime/agent/agent_daemon.h"
#include "runtime/http/http.h"

namespace sluice::runtime {
namespace {

using Json = nlohmann::json;

int EphemeralPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a));
  socklen_t len = sizeof(a);
  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  close(fd);
  return ntohs(a.sin_port);
}

// A 16-64-4 MLP in the classifier's weights JSON.
std::string WeightsJson() {
  const int in = 16, hidden = 64, classes = 4;
  Json j = {{"in_dim", in}, {"hidden", hidden}, {"classes", classes}};
  j["w1"] = std::vector<float>(static_cast<size_t>(in * hidden), 0.01f);
  j["b1"] = std::vector<float>(static_cast<size_t>(hidden), 0.0f);
  j["w2"] = std::vector<float>(static_cast<size_t>(hidden * classes), 0.02f);
  j["b2"] = std::vector<float>(static_cast<size_t>(classes), 0.0f);
  return j.dump();
}

class AgentPoolTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/sluice-agentpool-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    AgentOptions o;
    o.port = 0;
    o.device = "emulated";
    o.emulated_gpus = 1;
    o.run_dir = dir_ + "/run";
    const int p = std::min(EphemeralPort(), 65000);
    o.instance_ports = {p, p + 20};
    o.health_interval = absl::Milliseconds(50);
    o.start_timeout = absl::Seconds(30);
    o.pool_per_gpu = 1;
    o.params_capacity_bytes = int64_t{64} << 20;
    absl::StatusOr<std::unique_ptr<AgentDaemon>> d = AgentDaemon::Start(o);
    if (!d.ok() && absl::StrContains(d.status().message(), "not found")) {
      GTEST_SKIP() << d.status();
    }
    ASSERT_TRUE(d.ok()) << d.status();
    daemon_ = *std::move(d);
    weights_ = dir_ + "/weights.json";
    std::ofstream(weights_) << WeightsJson();
  }
  void TearDown() override {
    daemon_.reset();
    std::filesystem::remove_all(dir_);
  }
  http::Response Send(int port, const std::string& method, const std::string& target,
                      std::string body = "") {
    http::Request r;
    r.method = method;
    r.target = target;
    r.body = std::move(body);
    r.headers = {{"content-type", "application/json"}};
    absl::StatusOr<http::Response> resp = http::Fetch({"127.0.0.1", port}, r);
    EXPECT_TRUE(resp.ok()) << resp.status();
    return resp.ok() ? *resp : http::Response{};
  }
  http::Response Agent(const std::string& method, const std::string& target, std::string body = "") {
    return Send(daemon_->port(), method, target, std::move(body));
  }
  void StartClassifier(int64_t id) {
    const Json body = {{"id", id},
                       {"function", "clf"},
                       {"command", {"${SLUICE_BIN_DIR}/sluice-example-classifier"}},
                       {"model_path", weights_},
                       {"request", 0.5},
                       {"limit", 1.0}};
    const http::Response r = Agent("POST", "/agent/v1/instances", body.dump());
    ASSERT_EQ(r.status, 201) << r.body;
  }
  // Polls until `pred` holds for instance `id` (fails after 30 s).
  Json WaitInstance(int64_t id, const std::function<bool(const Json&)>& pred) {
    Json last;
    for (int i = 0; i < 1500; ++i) {
      const Json node = Json::parse(Agent("GET", "/agent/v1/node").body, nullptr, false);
      for (const Json& inst : node.value("instances", Json::array())) {
        if (inst["id"] == id) last = inst;
      }
      if (!last.is_null() && pred(last)) return last;
      usleep(20000);
    }
    ADD_FAILURE() << "instance " << id << ": " << last.dump();
    return last;
  }
  // Waits until a pooled process listens on its control socket and the store holds `model`.
  bool WaitPoolAndCache(const std::string& model) {
    for (int i = 0; i < 1500; ++i) {
      bool listening = false;
      std::error_code ec;
      for (const auto& e : std::filesystem::directory_iterator(dir_ + "/run/pool", ec)) {
        listening = listening || e.path().extension() == ".sock";
      }
      const Json params = Json::parse(Agent("GET", "/agent/v1/params").body, nullptr, false);
      bool cached = false;
      for (const Json& m : params.value("models", Json::array())) {
        cached = cached || (m.value("model", "") == model && m.value("ready", false));
      }
      if (listening && cached) return true;
      usleep(20000);
    }
    return false;
  }

  std::string dir_, weights_;
  std::unique_ptr<AgentDaemon> daemon_;
};

TEST_F(AgentPoolTest, SecondStartIsAPooledProcessWithParametersFromHostMemory) {
  StartClassifier(1);
  const Json first = WaitInstance(1, [](const Json& j) { return j["state"] == "ready"; });
  EXPECT_EQ(first["start"]["path"], "spawn") << first.dump();
  EXPECT_EQ(first["start"]["params"], "disk");
  const std::string model = first["start"]["params_model"];
  ASSERT_FALSE(model.empty());
  ASSERT_TRUE(WaitPoolAndCache(model)) << Agent("GET", "/agent/v1/params").body;

  StartClassifier(2);
  const Json second = WaitInstance(2, [](const Json& j) { return j["state"] == "ready"; });
  EXPECT_EQ(second["start"]["path"], "pool") << second.dump();
  EXPECT_EQ(second["start"]["params"], "host-cache");
  const int port = second["port"];
  const Json stats = Json::parse(Send(port, "GET", "/sluice/v1/stats").body, nullptr, false);
  ASSERT_TRUE(stats.contains("start")) << stats.dump();
  EXPECT_TRUE(stats["start"]["pooled"].get<bool>()) << stats.dump();
  EXPECT_EQ(stats["start"]["params_source"], "host-cache");
  EXPECT_GT(stats["start"]["params_bytes"].get<int64_t>(), 10000);
  std::printf("pooled start record: agent %s instance %s\n", second["start"].dump().c_str(),
              stats["start"].dump().c_str());

  const Json infer = {{"inputs",
                       {{{"name", "x"},
                         {"shape", {1, 16}},
                         {"datatype", "FP32"},
                         {"data", std::vector<float>(16, 1.0f)}}}}};
  const http::Response r = Send(port, "POST", "/v2/models/clf/infer", infer.dump());
  EXPECT_EQ(r.status, 200) << r.body;
  // The pooled process's token-server slot now counts as instance 2.
  const TokenServer* ts = daemon_->token_server(second["gpu"]);
  ASSERT_NE(ts, nullptr);
  bool bound = false;
  for (const SlotView& v : ts->Slots()) {
    bound = bound || (v.state == SLUICE_SLOT_ACTIVE && v.instance.value() == 2 &&
                      v.pid == second["pid"].get<pid_t>());
  }
  EXPECT_TRUE(bound);
}

TEST_F(AgentPoolTest, ParkOverTheApiAndBadBodiesNameTheField) {
  StartClassifier(5);
  WaitInstance(5, [](const Json& j) { return j["state"] == "ready"; });
  http::Response r = Agent("PUT", "/agent/v1/instances/5/park", R"({"parked": true})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_TRUE(Json::parse(r.body)["parked"].get<bool>());
  r = Agent("PUT", "/agent/v1/instances/5/park", R"({"parked": "yes"})");
  EXPECT_EQ(r.status, 400);
  EXPECT_TRUE(absl::StrContains(r.body, "field 'parked'")) << r.body;
  r = Agent("PUT", "/agent/v1/instances/5/park", R"({"parked": true, "x": 1})");
  EXPECT_EQ(r.status, 400);
  EXPECT_TRUE(absl::StrContains(r.body, "field 'x'")) << r.body;
  EXPECT_EQ(Agent("PUT", "/agent/v1/instances/77/park", R"({"parked": true})").status, 404);
  r = Agent("PUT", "/agent/v1/instances/5/park", R"({"parked": false})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_FALSE(Json::parse(r.body)["parked"].get<bool>());
}

}  // namespace
}  // namespace sluice::runtime
