// ControllerDaemon: the Sluice controller process (docs/platform.md, "Admin API" and "Internal API
// between controller and gateway"): function registry in a Store, profiling through real trials
// on a node, Dilu placement and lazy horizontal scaling through the node agents. Used by
// `sluice up` and the tests. Thread safety: Start/Stop from one (non-loop) thread; all state
// lives on the daemon's one event loop, profiling trials on worker threads.
#ifndef SLUICE_RUNTIME_CONTROLLER_CONTROLLER_DAEMON_H_
#define SLUICE_RUNTIME_CONTROLLER_CONTROLLER_DAEMON_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
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
  // The store: a SQLite file path, or a URI (sqlite:PATH, etcd://HOST:PORT, memory:; see
  // OpenStore); empty: in memory.
  std::string store_path;
  std::vector<std::string> agents = {"127.0.0.1:7072"};  // "host:port", one node each
  absl::Duration node_poll = absl::Milliseconds(200);    // GET /agent/v1/node period
  absl::Duration agent_wait = absl::Seconds(10);         // Start waits this long for agents
  core::ProfilerConfig profiler;
  int trial_iterations = 5;  // handler runs per trial
  absl::Duration profile_ready_timeout = absl::Seconds(120);
  core::SchedulerConfig scheduler;
  // Window and phi from Dilu; one sample per gateway load report. min/max/capacity per function.
  core::LazyScalerConfig lazy;
  // The policy set (core::KnownPolicies()) of a deployed spec that names no `policy:`; resolved
  // at deploy time and stored with the spec (`sluice controller --default-policy`).
  std::string default_policy = "sluice";
  absl::Duration drain_grace = absl::Milliseconds(300);  // route removal -> agent DELETE
  absl::Duration drain_timeout = absl::Seconds(10);      // the agent's drain_ms
  LlmControllerOptions llm;  // P/D pools of disaggregated LLM functions (llm_pools.h)
  // Several machines (issue 12, docs/platform.md "Several machines"). `discover_nodes`: the
  // agents are the nodes registered under /sluice/nodes/ in the store (they join and leave;
  // `agents` is ignored). `elect`: lead through the store's /sluice/leader lease; a follower
  // serves read-only status and answers other calls 503 naming the leader. Both need a store
  // with the cluster features (SQLite shared by the controllers, or etcd).
  bool discover_nodes = false;
  bool elect = false;
  std::string id;         // this controller's election id (empty: "<host>:<port>")
  std::string advertise;  // "host:port" others reach the admin API at (empty: host:port)
  absl::Duration leader_ttl = absl::Seconds(2);         // leader lease (>= 1 s)
  absl::Duration cluster_tick = absl::Milliseconds(100);  // election and node-watch period
  // Tests: a store shared by several daemons in one process (borrowed; outlives the daemon).
  // Null: the daemon opens `store_path`.
  Store* shared_store = nullptr;
  // Called on the loop when this controller, while leading, learns that its lease is gone
  // (another controller may lead now). It stops acting first and answers 503 from then on; the
  // `sluice controller` command exits (status 75) so its supervisor (sluice up, Kubernetes)
  // restarts it as a follower, as Kubernetes' own controllers do on lost leadership. Empty:
  // stay up and deposed.
  std::function<void()> on_deposed;
};

// "" when `name` is one of core::KnownPolicies(); else "unknown policy 'NAME' (known: ...)".
// For --default-policy (the controller's and `sluice up`'s) and ControllerOptions.
std::string UnknownPolicyMessage(std::string_view name);

class ControllerDaemon {
 public:
  // Opens the store, waits (up to agent_wait) for every agent's node status to build the cluster,
  // reloads the registry (profiles kept; functions still profiling are profiled again), re-adopts
  // the agents' instances of known functions (stops unknown ones), and starts serving. Errors:
  // InvalidArgument for bad options, Unavailable naming an agent or the port, store errors.
  static absl::StatusOr<std::unique_ptr<ControllerDaemon>> Start(const ControllerOptions& options);
  ~ControllerDaemon();  // Stop()s

  int port() const;
  // True while this daemon leads (always, without `elect`). Thread-safe.
  bool leading() const;
  // Stops serving, cancels profiling (joins its threads) and the loop. Instances keep running on
  // the agents (a restarted controller re-adopts them). Idempotent.
  void Stop();
  // Test hook: Stop() as a crash would, without resigning the leadership, so the other
  // controllers take over only once the leader lease expires.
  void StopAsIfCrashed();

 private:
  ControllerDaemon() = default;
  std::unique_ptr<http::EventLoop> loop_;  // also the store's lease clock: declared first
  std::unique_ptr<Store> store_;           // null with options.shared_store
  std::unique_ptr<ControllerCore> controller_;
  std::unique_ptr<http::Server> server_;
  int port_ = 0;
  bool stopped_ = false;
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_CONTROLLER_CONTROLLER_DAEMON_H_
