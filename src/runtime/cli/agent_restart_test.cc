// An instance survives its agent's death: `sluice agent` (emulated device) starts a
// sluice-agent-fake-instance, is killed with SIGKILL, and a new `sluice agent` on the same run
// directory and port re-adopts it: same id and pid, no restart counted, it still serves.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

#include "nlohmann/json.hpp"
#include "runtime/cli/daemon_launch.h"
#include "runtime/http/http.h"

namespace sluice::runtime {
namespace {

using nlohmann::json;

absl::StatusOr<http::Response> Call(int port, const std::string& method, const std::string& path,
                                    const std::string& body = "") {
  http::Request r;
  r.method = method;
  r.target = path;
  r.body = body;
  r.headers = {{"content-type", "application/json"}};
  return http::Fetch({"127.0.0.1", port}, r, absl::Seconds(5));
}

// Instance `id` from GET /agent/v1/node once `pred` holds (null after 30 s).
json WaitInstance(int port, int64_t id, const std::function<bool(const json&)>& pred) {
  for (int i = 0; i < 300; ++i) {
    absl::StatusOr<http::Response> r = Call(port, "GET", "/agent/v1/node");
    const json doc = r.ok() && r->status == 200 ? json::parse(r->body, nullptr, false) : json();
    if (doc.is_object() && doc.contains("instances")) {
      for (const json& inst : doc["instances"]) {
        if (inst["id"] == id && pred(inst))
          return inst;
      }
    }
    usleep(100 * 1000);
  }
  return json();
}

TEST(AgentRestartTest, InstancesAreReadoptedNotRestarted) {
  char tmpl[] = "/tmp/sluice-readopt-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  DaemonEntry agent;
  agent.args = {"agent", "--port", "0", "--run-dir", dir + "/run", "--device", "emulated",
                "--emulated-gpus", "1", "--health-interval-ms", "50"};
  agent.health = "/healthz";
  agent.log = dir + "/agent.log";
  absl::Status s = internal::StartDaemon(SLUICE_BINARY, "agent", false, absl::Seconds(60), agent);
  if (!s.ok() && absl::StrContains(s.message(), "NOT_FOUND")) {
    if (agent.pid > 0)
      kill(agent.pid, SIGKILL);
    GTEST_SKIP() << "the agent's programs are not built here: " << s.message();
  }
  ASSERT_TRUE(s.ok()) << s;
  const json start = {{"id", 1},
                      {"function", "f"},
                      {"command", {"${SLUICE_BIN_DIR}/sluice-agent-fake-instance",
                                   "${FUNCTION}-${INSTANCE}", "${MODEL_PATH}"}},
                      {"env", {{"FAKE_PORT", "port=${PORT}"}}},
                      {"model_path", "/models/m1"},
                      {"request", 0.25},
                      {"limit", 0.5}};
  absl::StatusOr<http::Response> created =
      Call(agent.port, "POST", "/agent/v1/instances", start.dump());
  ASSERT_TRUE(created.ok() && created->status == 201)
      << (created.ok() ? created->body : created.status().ToString());
  const json ready =
      WaitInstance(agent.port, 1, [](const json& i) { return i["state"] == "ready"; });
  ASSERT_FALSE(ready.is_null());
  const int pid = ready["pid"].get<int>();
  const int instance_port = ready["port"].get<int>();

  ASSERT_EQ(kill(agent.pid, SIGKILL), 0);  // the agent dies; its instance does not
  waitpid(agent.pid, nullptr, 0);
  EXPECT_EQ(kill(pid, 0), 0);
  s = internal::StartDaemon(SLUICE_BINARY, "agent", false, absl::Seconds(60), agent);
  ASSERT_TRUE(s.ok()) << s;
  const json adopted =
      WaitInstance(agent.port, 1, [](const json& i) { return i["state"] == "ready"; });
  ASSERT_FALSE(adopted.is_null()) << internal::LogTail(agent.log, 20);
  EXPECT_EQ(adopted["pid"], pid);
  EXPECT_EQ(adopted["restarts"], 0);
  EXPECT_EQ(adopted["port"], instance_port);
  absl::StatusOr<http::Response> health = Call(instance_port, "GET", "/v2/health/ready");
  ASSERT_TRUE(health.ok()) << health.status();
  EXPECT_EQ(health->status, 200);

  kill(agent.pid, SIGTERM);  // a graceful stop takes its instances with it
  waitpid(agent.pid, nullptr, 0);
  for (int i = 0; i < 100 && kill(pid, 0) == 0; ++i)
    usleep(50 * 1000);
  EXPECT_NE(kill(pid, 0), 0);
  EXPECT_FALSE(std::filesystem::exists(dir + "/run/instances.json"));
  if (pid > 0)
    kill(-pid, SIGKILL);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace sluice::runtime
