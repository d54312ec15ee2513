// ControllerDaemon: the Sluice controller process (docs/platform.md, "Admin API" and "Internal API
// between controller and gateway"): function registry in a Store, profiling through real trials
// on a node, Dilu placement and lazy horizontal scaling through the node agents. Used by
// `sluice up` and the tests. Thread safety: Start/Stop from one (non-loop) thread; all state
// lives on the daemon's one event loop, profiling trials on worker threads.
#ifndef SLUICE_RUNTIME_CONTROLLER_CONTROLLER_DAEMON_H_
#define SLUICE_RUNTIME_CONTROLLER_CONTROLLER_DAEMON_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "core/dilu/lazy_scaler.h"
#include "core/dilu/profiler.h"
#include "core/dilu/scheduler.h"
#include "runtime/controller/llm_pools.h"

namespace sluice::runtime {

class ControllerCore;
class Store;
namespace http {
class EventLoop;
class Server;
}  // namespace http

struct ControllerOptions {
  std::string host = "127.0.0.1";
  int port = 7071;                                       // 0: ephemeral (see port())
  std::string store_path;  // --store URI (sqlite:PATH, PATH, etcd://HOST:PORT); empty: in memory
  std::vector<std::string> agents = {"127.0.0.1:7072"};  // "host:port", one node each
  absl::Duration node_poll = absl::Milliseconds(200);    // GET /agent/v1/node period
  absl::Duration agent_wait = absl::Seconds(10);         // Start waits this long for agents
  core::ProfilerConfig profiler;
  int trial_iterations = 5;  // handler runs per trial
  absl::Duration profile_ready_timeout = absl::Seconds(120);
  core::SchedulerConfig scheduler;
  // Window and phi from Dilu; one sample per gateway load report. min/max/capacity per function.
  core::LazyScalerConfig lazy;
  absl::Duration drain_grace = absl::Milliseconds(300);  // route removal -> agent DELETE
  absl::Duration drain_timeout = absl::Seconds(10);      // the agent's drain_ms
  LlmControllerOptions llm;  // P/D pools of disaggregated LLM functions (llm_pools.h)
};

class ControllerDaemon {
 public:
  // Opens the store, waits (up to agent_wait) for every agent's node status to build the cluster,
  // reloads the registry (profiles kept; functions still profiling are profiled again), re-adopts
  // the agents' instances of known functions (stops unknown ones), and starts serving. Errors:
  // InvalidArgument for bad options, Unavailable naming an agent or the port, store errors.
  static absl::StatusOr<std::unique_ptr<ControllerDaemon>> Start(const ControllerOptions& options);
  ~ControllerDaemon();  // Stop()s

  int port() const;
  // Stops serving, cancels profiling (joins its threads) and the loop. Instances keep running on
  // the agents (a restarted controller re-adopts them). Idempotent.
  void Stop();

 private:
  ControllerDaemon() = default;
  std::unique_ptr<Store> store_;
  std::unique_ptr<http::EventLoop> loop_;
  std::unique_ptr<ControllerCore> controller_;
  std::unique_ptr<http::Server> server_;
  int port_ = 0;
  bool stopped_ = false;
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_CONTROLLER_CONTROLLER_DAEMON_H_
