// End-to-end tests of the agent daemon on the emulated device: real sluice-spin calibration,
// token servers, the HTTP API and sluice-agent-fake-instance processes (label emulated).
#include "runtime/agent/agent_daemon.h"

#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "runtime/http/http.h"

namespace sluice::runtime {
namespace {

using Json = nlohmann::json;
using ::testing::HasSubstr;

// A port the kernel just handed out: the start of the agent's instance range.
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

std::string TempDir() {
  char tmpl[] = "/tmp/sluice-agentd-XXXXXX";
  return mkdtemp(tmpl) != nullptr ? tmpl : "";
}

AgentOptions TestOptions(const std::string& dir) {
  AgentOptions o;
  o.port = 0;
  o.device = "emulated";
  o.run_dir = dir + "/run";
  const int p = EphemeralPort();
  o.instance_ports = {std::min(p, 65000), std::min(p, 65000) + 30};
  o.health_interval = absl::Milliseconds(20);
  o.start_timeout = absl::Seconds(20);
  return o;
}

class AgentDaemonTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new std::string(TempDir());
    absl::StatusOr<std::unique_ptr<AgentDaemon>> d = AgentDaemon::Start(TestOptions(*dir_));
    if (!d.ok()) {
      start_error_ = new std::string(d.status().ToString());
      return;
    }
    daemon_ = d->release();
  }
  static void TearDownTestSuite() {
    delete daemon_;
    daemon_ = nullptr;
    std::filesystem::remove_all(*dir_);
    delete dir_;
  }
  void SetUp() override {
    if (daemon_ == nullptr) {
      if (start_error_ != nullptr && absl::StrContains(*start_error_, "not found")) {
        GTEST_SKIP() << *start_error_;  // sluice-spin / emulated driver not built
      }
      FAIL() << (start_error_ ? *start_error_ : "no daemon");
    }
  }
  std::string Url(const std::string& path) const {
    return absl::StrCat("127.0.0.1:", daemon_->port(), path);
  }
  http::Response Send(const std::string& method, const std::string& target, std::string body) {
    http::Request r;
    r.method = method;
    r.target = target;
    r.body = std::move(body);
    r.headers = {{"content-type", "application/json"}};
    absl::StatusOr<http::Response> resp = http::Fetch({"127.0.0.1", daemon_->port()}, r);
    EXPECT_TRUE(resp.ok()) << resp.status();
    return resp.ok() ? *resp : http::Response{};
  }
  Json Node() {
    const std::string body = Send("GET", "/agent/v1/node", "").body;
    if (getenv("AGENTD_DEBUG")) fprintf(stderr, "%s\n", body.c_str());
    return Json::parse(body);
  }
  // Polls GET /agent/v1/node until instance `id` satisfies `pred` (fails after 20 s).
  Json WaitInstance(int64_t id, const std::function<bool(const Json&)>& pred) {
    Json last;
    for (int i = 0; i < 1000; ++i) {
      const Json node = Node();
      for (const Json& inst : node["instances"]) {
        if (inst["id"] == id) last = inst;
      }
      if (!last.is_null() && pred(last)) return last;
      usleep(20000);
    }
    ADD_FAILURE() << "instance " << id << " never reached the condition: " << last.dump();
    return last;
  }
  Json WaitState(int64_t id, const std::string& state) {
    return WaitInstance(id, [&](const Json& j) { return j["state"] == state; });
  }
  Json StartFake(int64_t id, const std::string& function) {
    Json body = {{"id", id},
                 {"function", function},
                 {"command", {"${SLUICE_BIN_DIR}/sluice-agent-fake-instance",
                              "${FUNCTION}-${INSTANCE}", "${MODEL_PATH}"}},
                 {"env", {{"FAKE_PORT", "port=${PORT}"}, {"FAKE_GPU", "${GPU}"}}},
                 {"model_path", "/models/m1"},
                 {"request", 0.25},
                 {"limit", 0.5}};
    http::Response r = Send("POST", "/agent/v1/instances", body.dump());
    EXPECT_EQ(r.status, 201) << r.body;
    return Json::parse(r.body, nullptr, false);
  }
  http::Response ToInstance(int port, const std::string& method, const std::string& target) {
    http::Request r;
    r.method = method;
    r.target = target;
    absl::StatusOr<http::Response> resp = http::Fetch({"127.0.0.1", port}, r);
    EXPECT_TRUE(resp.ok()) << resp.status();
    return resp.ok() ? *resp : http::Response{};
  }

  static std::string* dir_;
  static std::string* start_error_;
  static AgentDaemon* daemon_;
};
std::string* AgentDaemonTest::dir_ = nullptr;
std::string* AgentDaemonTest::start_error_ = nullptr;
AgentDaemon* AgentDaemonTest::daemon_ = nullptr;

TEST_F(AgentDaemonTest, NodeReportsTwoCalibratedEmulatedGpus) {
  Json node = Node();
  EXPECT_EQ(node["device"], "emulated");
  EXPECT_EQ(node["node"], "node-0");
  ASSERT_EQ(node["gpus"].size(), 2u);
  std::set<std::string> uuids;
  for (const Json& g : node["gpus"]) {
    uuids.insert(g["uuid"].get<std::string>());
    EXPECT_EQ(g["uuid"].get<std::string>().rfind("EMU-", 0), 0u) << g.dump();
    EXPECT_EQ(g["sm_count"], 108);
    EXPECT_GT(g["tokens_per_period"].get<int64_t>(), 0);
    EXPECT_EQ(g["period_us"], 5000);
    EXPECT_NE(daemon_->token_server(g["uuid"]), nullptr);
  }
  EXPECT_EQ(uuids.size(), 2u);
  EXPECT_EQ(Send("GET", "/healthz", "").status, 200);
}

TEST_F(AgentDaemonTest, StartsReadyWithEnvAndExpandedPlaceholders) {
  Json started = StartFake(1, "resnet");
  EXPECT_EQ(started["state"], "starting");
  Json ready = WaitState(1, "ready");
  const int port = ready["port"];
  Json env = Json::parse(ToInstance(port, "GET", "/fake/env").body);
  EXPECT_EQ(env["argv"][1], "resnet-1");
  EXPECT_EQ(env["argv"][2], "/models/m1");
  const Json& e = env["env"];
  EXPECT_EQ(e["PORT"], std::to_string(port));
  EXPECT_EQ(e["FAKE_PORT"], "port=" + std::to_string(port));
  EXPECT_EQ(e["FAKE_GPU"], ready["gpu"]);
  EXPECT_EQ(e["SLUICE_GPU_UUID"], ready["gpu"]);
  EXPECT_EQ(e["SLUICE_FUNCTION"], "resnet");
  EXPECT_EQ(e["SLUICE_INSTANCE_ID"], "1");
  EXPECT_EQ(e["SLUICE_MODEL_PATH"], "/models/m1");
  EXPECT_THAT(e["LD_PRELOAD"].get<std::string>(), HasSubstr("libsluice_cuda.so"));
  EXPECT_THAT(e["SLUICE_TOKEN_SOCKET"].get<std::string>(), HasSubstr("/run/token.sock"));
  EXPECT_THAT(e["SLUICE_REAL_LIBCUDA"].get<std::string>(), HasSubstr("libcuda.so.1"));
  EXPECT_EQ(e["SLUICE_EMU_UUID"].get<std::string>().rfind("EMU-", 0), 0u);
  EXPECT_TRUE(std::filesystem::exists(*dir_ + "/run/logs/resnet-1.log"));
  EXPECT_EQ(Send("DELETE", "/agent/v1/instances/1?drain_ms=0", "").status, 202);
  WaitState(1, "stopped");
}

TEST_F(AgentDaemonTest, CrashRestartsToReadyWithOneRestart) {
  Json first = (StartFake(2, "crashy"), WaitState(2, "ready"));
  ToInstance(first["port"], "POST", "/crash?code=3");
  Json again = WaitInstance(2, [](const Json& j) {
    return j["state"] == "ready" && j["restarts"] == 1;
  });
  EXPECT_NE(again["pid"], first["pid"]);
  EXPECT_EQ(again["exit_code"], 3);
  EXPECT_EQ(Send("DELETE", "/agent/v1/instances/2?drain_ms=0", "").status, 202);
  WaitState(2, "stopped");
}

TEST_F(AgentDaemonTest, DrainWaitsForInFlightThenStops) {
  const int port = (StartFake(3, "drainy"), WaitState(3, "ready"))["port"];
  ToInstance(port, "POST", "/fake/in_flight?n=2");
  WaitInstance(3, [](const Json& j) { return j["in_flight"] == 2; });
  EXPECT_EQ(Send("DELETE", "/agent/v1/instances/3?drain_ms=60000", "").status, 202);
  Json draining = WaitState(3, "draining");
  EXPECT_GT(draining["pid"].get<int>(), 0);
  ToInstance(port, "POST", "/fake/in_flight?n=0");
  Json stopped = WaitState(3, "stopped");
  EXPECT_EQ(stopped["exit_code"], 0);  // the fake instance exits 0 on SIGTERM
  EXPECT_EQ(Send("DELETE", "/agent/v1/instances/3", "").status, 202);  // forgets it
  EXPECT_EQ(Send("DELETE", "/agent/v1/instances/3", "").status, 404);
}

TEST_F(AgentDaemonTest, QuotaPutReachesTheTokenServerSlot) {
  Json body = {{"id", 4}, {"function", "spin"}, {"request", 0.3}, {"limit", 0.6},
               {"command", {"${SLUICE_BIN_DIR}/sluice-spin", "--seconds", "60"}}};
  http::Response r = Send("POST", "/agent/v1/instances", body.dump());
  ASSERT_EQ(r.status, 201) << r.body;
  const std::string gpu = Json::parse(r.body)["gpu"];
  const TokenServer* ts = daemon_->token_server(gpu);
  ASSERT_NE(ts, nullptr);
  auto slot_quota = [&]() -> std::optional<core::SmQuota> {
    for (const SlotView& v : ts->Slots()) {
      if (v.state == SLUICE_SLOT_ACTIVE && v.instance.value() == 4) return v.quota;
    }
    return std::nullopt;
  };
  Json busy = WaitInstance(4, [](const Json& j) { return j["blocks_last_period"] > 0; });
  EXPECT_GT(busy["sm_share"].get<double>(), 0.0);
  ASSERT_TRUE(slot_quota().has_value());
  EXPECT_DOUBLE_EQ(slot_quota()->request, 0.3);
  r = Send("PUT", "/agent/v1/instances/4/quota", R"({"request": 0.2, "limit": 0.4})");
  EXPECT_EQ(r.status, 200) << r.body;
  EXPECT_DOUBLE_EQ(slot_quota()->request, 0.2);
  EXPECT_DOUBLE_EQ(slot_quota()->limit, 0.4);
  EXPECT_EQ(Json::parse(r.body)["limit"], 0.4);
  EXPECT_EQ(Send("PUT", "/agent/v1/instances/4/quota", R"({"limit": 7})").status, 400);
  http::Response m = Send("GET", "/metrics", "");
  EXPECT_THAT(m.body, HasSubstr("sluice_agent_instance_sm_share{function=\"spin\",instance_id=\"4\"}"));
  EXPECT_EQ(Send("DELETE", "/agent/v1/instances/4?drain_ms=0", "").status, 202);
  WaitState(4, "stopped");
}

TEST_F(AgentDaemonTest, TimeQuotaIsAppliedLiveAndReported) {
  Json body = {{"id", 8}, {"function", "tq"}, {"request", 0.5}, {"limit", 0.5},
               {"time_quota", 0.4}, {"slo_sensitive", false},
               {"command", {"${SLUICE_BIN_DIR}/sluice-spin", "--seconds", "60"}}};
  http::Response r = Send("POST", "/agent/v1/instances", body.dump());
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_EQ(Json::parse(r.body)["time_quota"], 0.4);
  auto effective = [](double want) {  // s x q once the budgets follow it
    return [want](const Json& j) {
      return j["sm_share"] > 0.45 && std::abs(j["effective_share"].get<double>() - want) < 0.02;
    };
  };
  WaitInstance(8, effective(0.5 * 0.4));
  r = Send("PUT", "/agent/v1/instances/8/quota", R"({"time_quota": 0.8})");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(Json::parse(r.body)["time_quota"], 0.8);
  EXPECT_EQ(Json::parse(r.body)["limit"], 0.5) << "absent fields keep their values";
  WaitInstance(8, effective(0.5 * 0.8));
  for (const char* bad : {R"({"time_quota": 0})", R"({"time_quota": 1.01})"}) {
    r = Send("PUT", "/agent/v1/instances/8/quota", bad);
    EXPECT_EQ(r.status, 400);
    EXPECT_THAT(r.body, HasSubstr("'time_quota'"));
  }
  body["id"] = 9;
  body["time_quota"] = 2;
  r = Send("POST", "/agent/v1/instances", body.dump());
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("'time_quota'"));
  EXPECT_THAT(Send("GET", "/metrics", "").body,
              HasSubstr("sluice_agent_instance_time_quota{function=\"tq\",instance_id=\"8\"} 0.8"));
  EXPECT_EQ(Send("DELETE", "/agent/v1/instances/8?drain_ms=0", "").status, 202);
  WaitState(8, "stopped");
}

TEST_F(AgentDaemonTest, TwoGpuInstanceGetsBothUuidsAndBothTokenServersKnowItsSpec) {
  std::vector<std::string> uuids;
  for (const AgentGpu& g : daemon_->gpus()) uuids.push_back(g.info.uuid);
  ASSERT_EQ(uuids.size(), 2u);
  uuids = {uuids[1], uuids[0]};  // order is the request's, not the node's
  Json body = {{"id", 6}, {"function", "wide"}, {"gpus", uuids}, {"request", 0.3},
               {"limit", 0.6}, {"command", {"${SLUICE_BIN_DIR}/sluice-agent-fake-instance"}}};
  http::Response r = Send("POST", "/agent/v1/instances", body.dump());
  ASSERT_EQ(r.status, 201) << r.body;
  Json ready = WaitState(6, "ready");
  EXPECT_EQ(ready["gpu"], uuids[0]);
  EXPECT_EQ(ready["gpus"], Json(uuids));
  const Json e = Json::parse(ToInstance(ready["port"], "GET", "/fake/env").body)["env"];
  EXPECT_EQ(e["SLUICE_GPU_UUID"], uuids[0]);
  EXPECT_EQ(e["SLUICE_GPU_UUIDS"], uuids[0] + "," + uuids[1]);
  r = Send("PUT", "/agent/v1/instances/6/quota", R"({"request": 0.2, "limit": 0.4})");
  EXPECT_EQ(r.status, 200) << r.body;
  for (const std::string& uuid : uuids) {
    std::optional<InstanceSpec> spec = daemon_->token_server(uuid)->InstanceSpecOf(
        common::InstanceId(6));
    ASSERT_TRUE(spec.has_value()) << uuid;
    EXPECT_DOUBLE_EQ(spec->quota.request, 0.2) << uuid;
    EXPECT_DOUBLE_EQ(spec->quota.limit, 0.4) << uuid;
  }
  body["id"] = 7;
  body["gpus"] = {uuids[0], "GPU-none"};
  r = Send("POST", "/agent/v1/instances", body.dump());
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("'gpus[1]'"));
  body["gpus"] = {uuids[0], uuids[0]};
  r = Send("POST", "/agent/v1/instances", body.dump());
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("'gpus[1]': duplicate"));
  EXPECT_EQ(Send("DELETE", "/agent/v1/instances/6?drain_ms=0", "").status, 202);
  WaitState(6, "stopped");
}

TEST_F(AgentDaemonTest, BadRequestsNameTheProblem) {
  auto post = [&](const Json& body) { return Send("POST", "/agent/v1/instances", body.dump()); };
  http::Response r = post({{"function", "f"}, {"command", {"x"}}});
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("'id'"));
  r = post({{"id", 50}, {"function", "f"}, {"command", {"x", "${NOPE}"}}});
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("${NOPE}"));
  r = post({{"id", 50}, {"function", "f"}, {"command", {"x"}}, {"gpu", "GPU-none"}});
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("'gpu'"));
  StartFake(51, "dup");
  r = post({{"id", 51}, {"function", "f"}, {"command", {"x"}}});
  EXPECT_EQ(r.status, 409) << r.body;
  EXPECT_EQ(Send("PUT", "/agent/v1/instances/99/quota", "{}").status, 404);
  EXPECT_EQ(Send("DELETE", "/agent/v1/instances/99", "").status, 404);
  EXPECT_EQ(Send("DELETE", "/agent/v1/instances/51?drain_ms=0", "").status, 202);
  WaitState(51, "stopped");
}

TEST(AgentDaemonLifecycle, StopRemovesTheEmulatedSegmentsAndKillsInstances) {
  const std::string dir = TempDir();
  AgentOptions o = TestOptions(dir);
  absl::StatusOr<std::unique_ptr<AgentDaemon>> d = AgentDaemon::Start(o);
  if (!d.ok() && absl::StrContains(d.status().message(), "not found")) {
    GTEST_SKIP() << d.status();
  }
  ASSERT_TRUE(d.ok()) << d.status();
  std::vector<AgentGpu> gpus = (*d)->gpus();
  ASSERT_EQ(gpus.size(), 2u);
  EXPECT_NE(gpus[0].emu_uuid, gpus[1].emu_uuid);
  for (const AgentGpu& g : gpus) {
    EXPECT_TRUE(std::filesystem::exists("/dev/shm/sluice-emu-" + g.emu_uuid)) << g.emu_uuid;
  }
  Json body = {{"id", 1}, {"function", "f"}, {"command", {"/bin/sleep", "60"}}};
  absl::StatusOr<http::Response> r = http::Post(
      absl::StrCat("127.0.0.1:", (*d)->port(), "/agent/v1/instances"), body.dump());
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->status, 201) << r->body;
  const pid_t pid = Json::parse(r->body)["pid"];
  ASSERT_GT(pid, 0);
  (*d)->Stop();
  EXPECT_NE(kill(pid, 0), 0);  // killed and reaped
  for (const AgentGpu& g : gpus) {
    EXPECT_FALSE(std::filesystem::exists("/dev/shm/sluice-emu-" + g.emu_uuid)) << g.emu_uuid;
    EXPECT_FALSE(std::filesystem::exists("/dev/shm/sluice-gpu-" + g.info.uuid)) << g.info.uuid;
  }
  EXPECT_FALSE(std::filesystem::exists(o.run_dir + "/token.sock"));
  std::filesystem::remove_all(dir);
}

TEST(AgentDaemonLifecycle, RejectsBadOptionsAndCudaWithoutAGpu) {
  AgentOptions o;
  EXPECT_EQ(AgentDaemon::Start(o).status().code(), absl::StatusCode::kInvalidArgument);
  o.run_dir = "/tmp/x";
  o.device = "tpu";
  EXPECT_EQ(AgentDaemon::Start(o).status().code(), absl::StatusCode::kInvalidArgument);
  if (access("/dev/nvidiactl", F_OK) == 0) GTEST_SKIP() << "this host has an NVIDIA driver";
  const std::string dir = TempDir();
  o = TestOptions(dir);
  o.device = "cuda";
  absl::StatusOr<std::unique_ptr<AgentDaemon>> d = AgentDaemon::Start(o);
  std::filesystem::remove_all(dir);
  if (!d.ok() && d.status().code() == absl::StatusCode::kNotFound) GTEST_SKIP() << d.status();
  EXPECT_EQ(d.status().code(), absl::StatusCode::kFailedPrecondition) << d.status();
  EXPECT_THAT(std::string(d.status().message()), HasSubstr("NVML"));
}

}  // namespace
}  // namespace sluice::runtime
