// Platform: the whole of Sluice on one machine for the end-to-end tests - an AgentDaemon on the
// emulated device, a ControllerDaemon (SQLite in a private temp dir) and a GatewayDaemon, all
// in-process on port 0 with fast test settings - plus blocking HTTP helpers over http::Fetch.
// The destructor stops the daemons (the agent kills its instances) and removes the temp dir, on
// every path. Thread-compatible: one owner thread (the test's).
#ifndef SLUICE_TESTS_E2E_PLATFORM_H_
#define SLUICE_TESTS_E2E_PLATFORM_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

#include "nlohmann/json.hpp"
#include "runtime/agent/agent_daemon.h"
#include "runtime/controller/controller_daemon.h"
#include "runtime/gateway/gateway_daemon.h"
#include "runtime/http/http.h"

namespace sluice::runtime::e2e {

using Json = nlohmann::json;

// Fast settings so a test sees the lazy scaler's window fill in seconds, not minutes.
struct PlatformConfig {
  int gpus = 2;
  absl::Duration node_poll = absl::Milliseconds(100);
  absl::Duration routes_poll = absl::Milliseconds(50);
  absl::Duration load_report = absl::Milliseconds(200);
  absl::Duration lazy_window = absl::Seconds(4);  // 20 load reports
  int phi_out = 10;
  // phi_out + phi_in > window samples rules out flapping (lazy_scaler.h).
  int phi_in = 12;
  // The policy of specs without `policy:`. The fast settings above are the controller's own
  // lazy scaler's, i.e. Dilu's; `sluice up` defaults to `sluice` (ControllerOptions).
  std::string default_policy = "dilu";
};

class Platform {
 public:
  // Starts agent, controller and gateway in a fresh temp dir. Errors name the daemon.
  static absl::StatusOr<std::unique_ptr<Platform>> Start(const PlatformConfig& config = {});
  ~Platform();  // gateway, controller, agent stopped; temp dir removed

  // Stops the controller (instances keep running on the agent) and starts a new one on the same
  // SQLite file. The new one binds the old port when it can (the gateway keeps polling it);
  // otherwise it takes a fresh port and the gateway is restarted pointing at it.
  [[nodiscard]] absl::Status RestartController();

  const std::string& dir() const { return dir_; }
  static std::string BinDir();     // <build>/bin: the example programs
  std::string gateway() const;     // "127.0.0.1:port"
  std::string controller() const;  // "127.0.0.1:port"
  std::string agent() const;       // "127.0.0.1:port"
  AgentDaemon& agent_daemon() { return *agent_; }
  GatewayDaemon& gateway_daemon() { return *gateway_; }

  // Writes `text` to <dir>/<name> and returns the path.
  std::string WriteFile(const std::string& name, const std::string& text) const;

  // Blocking requests (http::Fetch, 10 s); a transport error is returned as the status.
  static absl::StatusOr<http::Response> Send(const std::string& host_port,
                                             const std::string& method, const std::string& target,
                                             std::string body = "",
                                             const std::string& content_type = "application/json",
                                             http::Headers headers = {});
  // POST /admin/v1/functions with a spec YAML.
  absl::StatusOr<http::Response> Deploy(const std::string& yaml) const;
  // GET /admin/v1/functions/{name} parsed; null Json when not 200.
  Json Describe(const std::string& name) const;
  // GET /agent/v1/node parsed; null Json on error.
  Json Node() const;
  // The agent's instances of `function` that serve or will: not draining, stopped, failed or
  // completed (a profiling instance drains while its function turns ready).
  Json AgentInstances(const std::string& function) const;
  // The agent's instance `id` in any state, or null Json.
  Json AgentInstance(int64_t id) const;
  // The value of one series of a daemon's /metrics, e.g.
  // `sluice_controller_profiling_trials_total{function="f"}`; -1 when absent.
  static double MetricValue(const std::string& host_port, const std::string& series);
  // POST /v2/models/{name}/infer on the gateway.
  absl::StatusOr<http::Response> Infer(const std::string& name, const Json& body,
                                       http::Headers headers = {}) const;

  // Polls Describe(name) every 50 ms until `pred` holds; returns the last status, or an error
  // (DeadlineExceeded with the last status) after `timeout`.
  absl::StatusOr<Json> WaitFunction(const std::string& name,
                                    const std::function<bool(const Json&)>& pred,
                                    absl::Duration timeout = absl::Seconds(60)) const;
  // The function is ready and has `n` instances in state ready (and no others).
  absl::StatusOr<Json> WaitReadyInstances(const std::string& name, int n,
                                          absl::Duration timeout = absl::Seconds(60)) const;

 private:
  Platform() = default;
  [[nodiscard]] absl::Status StartController(int port);
  [[nodiscard]] absl::Status StartGateway();

  PlatformConfig config_;
  std::string dir_;
  std::unique_ptr<AgentDaemon> agent_;
  std::unique_ptr<ControllerDaemon> controller_;
  std::unique_ptr<GatewayDaemon> gateway_;
};

// A spec for the classifier example (examples/classifier) as the tests deploy it. `extra` is
// appended verbatim (e.g. "quota: {request: 0.25, limit: 0.75}\n").
struct ClassifierSpec {
  std::string name = "classifier";
  std::string model_path;  // weights JSON file (KnownWeights()) or "seed:N"
  int slo_ms = 50;
  int max_batch = 8;
  int min = 0, max = 2;
  int blocks_base = 216, blocks_per_item = 108;  // 100 us spin blocks over 108 SMs
  std::string extra;
  std::string Yaml() const;
};

// Hand-checked weights: h = relu(I x + [0, -1]); logits = diag(1, 2) h + [0.5, 0].
const char* KnownWeights();
// A KServe v2 request with one tensor "x" of FP32 `data` and `shape`.
Json Row(const std::string& id, std::vector<int64_t> shape, std::vector<float> data);
// The softmax scores the known weights give for the 2-feature row `x`, and the argmax class.
std::vector<float> KnownScores(float x0, float x1, int64_t* cls);

}  // namespace sluice::runtime::e2e

#endif  // SLUICE_TESTS_E2E_PLATFORM_H_
