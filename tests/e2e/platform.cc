// Platform: starting and stopping the three daemons in-process, and the tests' HTTP helpers.
#include "platform.h"

#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include <netinet/in.h>

#include "common/status.h"

namespace sluice::runtime::e2e {
namespace {

// The start of the agent's instance port range: a port the kernel just handed out, so parallel
// test processes (each with its own agent) rarely overlap.
int EphemeralPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(a);
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0 &&
                  getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  close(fd);
  return ok ? std::min<int>(ntohs(a.sin_port), 65400) : 40000;
}

std::string HostPort(int port) {
  return absl::StrCat("127.0.0.1:", port);
}

}  // namespace

std::string Platform::BinDir() {
  const char* env = std::getenv("SLUICE_BIN_DIR");
  return env != nullptr ? env : SLUICE_E2E_BIN_DIR;
}

absl::StatusOr<std::unique_ptr<Platform>> Platform::Start(const PlatformConfig& config) {
  // Gateway, load driver and daemons share this process's descriptors: lift the soft limit.
  rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    setrlimit(RLIMIT_NOFILE, &nofile);
  }
  std::unique_ptr<Platform> p(new Platform());
  p->config_ = config;
  char tmpl[] = "/tmp/sluice-e2e-XXXXXX";
  if (mkdtemp(tmpl) == nullptr)
    return absl::InternalError("mkdtemp failed");
  p->dir_ = tmpl;

  AgentOptions a;
  a.port = 0;
  a.device = "emulated";
  a.emulated_gpus = config.gpus;
  a.run_dir = p->dir_ + "/run";
  a.bin_dir = BinDir();
  const int first = EphemeralPort();
  a.instance_ports = {first, first + 60};
  a.health_interval = absl::Milliseconds(50);
  a.start_timeout = absl::Seconds(30);
  absl::StatusOr<std::unique_ptr<AgentDaemon>> agent = AgentDaemon::Start(a);
  if (!agent.ok())
    return absl::Status(agent.status().code(), absl::StrCat("agent: ", agent.status().message()));
  p->agent_ = *std::move(agent);
  SLUICE_RETURN_IF_ERROR(p->StartController(0));
  SLUICE_RETURN_IF_ERROR(p->StartGateway());
  return p;
}

absl::Status Platform::StartController(int port) {
  ControllerOptions c;
  c.port = port;
  c.store_path = dir_ + "/controller.db";
  c.agents = {agent()};
  c.node_poll = config_.node_poll;
  c.agent_wait = absl::Seconds(10);
  c.trial_iterations = 3;
  c.profiler.max_batch = 8;
  c.profile_ready_timeout = absl::Seconds(30);
  c.lazy.window = config_.lazy_window;
  c.lazy.phi_out = config_.phi_out;
  c.lazy.phi_in = config_.phi_in;
  c.default_policy = config_.default_policy;
  c.drain_grace = absl::Milliseconds(200);  // > 3 routes polls: the gateway stops sending first
  c.drain_timeout = absl::Seconds(10);
  absl::StatusOr<std::unique_ptr<ControllerDaemon>> d = ControllerDaemon::Start(c);
  if (!d.ok())
    return absl::Status(d.status().code(), absl::StrCat("controller: ", d.status().message()));
  controller_ = *std::move(d);
  return absl::OkStatus();
}

absl::Status Platform::StartGateway() {
  GatewayOptions g;
  g.port = 0;
  g.controller = controller();
  g.routes_poll = config_.routes_poll;
  g.load_report = config_.load_report;
  absl::StatusOr<std::unique_ptr<GatewayDaemon>> d = GatewayDaemon::Start(g);
  if (!d.ok())
    return absl::Status(d.status().code(), absl::StrCat("gateway: ", d.status().message()));
  gateway_ = *std::move(d);
  return absl::OkStatus();
}

Platform::~Platform() {
  gateway_.reset();
  controller_.reset();
  agent_.reset();
  std::error_code ec;
  std::filesystem::remove_all(dir_, ec);
}

absl::Status Platform::RestartController() {
  const int old_port = controller_->port();
  controller_->Stop();
  controller_.reset();
  if (StartController(old_port).ok())
    return absl::OkStatus();
  // The old port was taken in between: a fresh one, and a gateway that knows it.
  SLUICE_RETURN_IF_ERROR(StartController(0));
  gateway_.reset();
  return StartGateway();
}

std::string Platform::gateway() const {
  return HostPort(gateway_->port());
}
std::string Platform::controller() const {
  return HostPort(controller_->port());
}
std::string Platform::agent() const {
  return HostPort(agent_->port());
}

std::string Platform::WriteFile(const std::string& name, const std::string& text) const {
  const std::string path = dir_ + "/" + name;
  std::ofstream(path) << text;
  return path;
}

absl::StatusOr<http::Response> Platform::Send(const std::string& host_port,
                                              const std::string& method, const std::string& target,
                                              std::string body, const std::string& content_type,
                                              http::Headers headers) {
  SLUICE_ASSIGN_OR_RETURN(http::Endpoint to, http::Endpoint::Parse(host_port));
  http::Request r;
  r.method = method;
  r.target = target;
  r.body = std::move(body);
  r.headers = std::move(headers);
  if (!r.body.empty())
    r.headers.emplace_back("content-type", content_type);
  return http::Fetch(to, std::move(r), absl::Seconds(10));
}

absl::StatusOr<http::Response> Platform::Deploy(const std::string& yaml) const {
  return Send(controller(), "POST", "/admin/v1/functions", yaml, "application/yaml");
}

Json Platform::Describe(const std::string& name) const {
  absl::StatusOr<http::Response> r = Send(controller(), "GET", "/admin/v1/functions/" + name);
  if (!r.ok() || r->status != 200)
    return Json();
  return Json::parse(r->body, nullptr, false);
}

Json Platform::Node() const {
  absl::StatusOr<http::Response> r = Send(agent(), "GET", "/agent/v1/node");
  if (!r.ok() || r->status != 200)
    return Json();
  return Json::parse(r->body, nullptr, false);
}

Json Platform::AgentInstances(const std::string& function) const {
  Json out = Json::array();
  Json node = Node();
  if (!node.is_object())
    return out;
  for (const Json& i : node["instances"]) {
    const std::string state = i.value("state", "");
    if (i.value("function", "") == function && state != "draining" && state != "stopped" &&
        state != "failed" && state != "completed") {
      out.push_back(i);
    }
  }
  return out;
}

double Platform::MetricValue(const std::string& host_port, const std::string& series) {
  absl::StatusOr<http::Response> r = Send(host_port, "GET", "/metrics");
  if (!r.ok() || r->status != 200)
    return -1;
  const std::string key = "\n" + series + " ";
  const size_t at = r->body.find(key);
  return at == std::string::npos ? -1 : std::atof(r->body.c_str() + at + key.size());
}

Json Platform::AgentInstance(int64_t id) const {
  Json node = Node();
  if (!node.is_object())
    return Json();
  for (const Json& i : node["instances"]) {
    if (i.value("id", int64_t{-1}) == id)
      return i;
  }
  return Json();
}

absl::StatusOr<http::Response> Platform::Infer(const std::string& name, const Json& body,
                                               http::Headers headers) const {
  return Send(gateway(), "POST", "/v2/models/" + name + "/infer", body.dump(), "application/json",
              std::move(headers));
}

absl::StatusOr<Json> Platform::WaitFunction(const std::string& name,
                                            const std::function<bool(const Json&)>& pred,
                                            absl::Duration timeout) const {
  const absl::Time deadline = absl::Now() + timeout;
  Json last;
  while (absl::Now() < deadline) {
    last = Describe(name);
    if (last.is_object() && pred(last))
      return last;
    absl::SleepFor(absl::Milliseconds(50));
  }
  return absl::DeadlineExceededError(
      absl::StrCat("function '", name, "' never reached the condition; last: ", last.dump()));
}

absl::StatusOr<Json> Platform::WaitReadyInstances(const std::string& name, int n,
                                                  absl::Duration timeout) const {
  return WaitFunction(
      name,
      [n](const Json& f) {
        const Json instances = f.value("instances", Json::array());
        if (f.value("state", "") != "ready" || !instances.is_array())
          return false;
        int ready = 0;
        for (const Json& i : instances)
          ready += i.value("state", "") == "ready" ? 1 : 0;
        return ready == n && static_cast<int>(instances.size()) == n;
      },
      timeout);
}

std::string ClassifierSpec::Yaml() const {
  return absl::StrCat("name: ", name, "\nkind: inference\n",
                      "command: [\"${SLUICE_BIN_DIR}/sluice-example-classifier\"]\n",
                      "model: {path: \"", model_path, "\", name: mlp}\n", "slo_ms: ", slo_ms,
                      "\nmemory_gib: 1\n", "batching: {max_batch: ", max_batch,
                      ", max_queue_delay_ms: 5}\n", "autoscaling: {min: ", min, ", max: ", max,
                      "}\n", "queue: {max_length: 256, timeout_ms: 5000}\n",
                      "env: {SLUICE_EXAMPLE_BLOCKS_BASE: ", blocks_base,
                      ", SLUICE_EXAMPLE_BLOCKS_PER_ITEM: ", blocks_per_item, "}\n", extra);
}

const char* KnownWeights() {
  return R"({"in_dim": 2, "hidden": 2, "classes": 2,
  "w1": [1, 0, 0, 1], "b1": [0, -1], "w2": [1, 0, 0, 2], "b2": [0.5, 0]})";
}

Json Row(const std::string& id, std::vector<int64_t> shape, std::vector<float> data) {
  return {{"id", id},
          {"inputs", {{{"name", "x"}, {"shape", shape}, {"datatype", "FP32"}, {"data", data}}}}};
}

std::vector<float> KnownScores(float x0, float x1, int64_t* cls) {
  const float h0 = std::max(0.0f, x0), h1 = std::max(0.0f, x1 - 1);
  const float l0 = h0 + 0.5f, l1 = 2 * h1;
  const float z = std::exp(l0) + std::exp(l1);
  *cls = l1 > l0 ? 1 : 0;
  return {std::exp(l0) / z, std::exp(l1) / z};
}

}  // namespace sluice::runtime::e2e
