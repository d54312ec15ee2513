// `sluice controller`: flags mirror ControllerOptions (units in the flag names).
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/time/time.h"

#include "runtime/cli/daemon_commands.h"
#include "runtime/cli/daemon_runner.h"
#include "runtime/controller/controller_daemon.h"

namespace sluice::runtime {
namespace {

struct ControllerFlags {
  ControllerOptions o;
  // Duration options as numbers for CLI11; defaults taken from ControllerOptions.
  int64_t node_poll_ms = absl::ToInt64Milliseconds(o.node_poll);
  double agent_wait_s = absl::ToDoubleSeconds(o.agent_wait);
  double profile_timeout_s = absl::ToDoubleSeconds(o.profile_ready_timeout);
  double lazy_window_s = absl::ToDoubleSeconds(o.lazy.window);
  int64_t drain_timeout_ms = absl::ToInt64Milliseconds(o.drain_timeout);
  int64_t leader_ttl_ms = absl::ToInt64Milliseconds(o.leader_ttl);
};

}  // namespace

void RegisterControllerCommand(CLI::App& app, int& exit_code) {
  auto f = std::make_shared<ControllerFlags>();  // owned by the callback
  CLI::App* c =
      app.add_subcommand("controller", "run the controller (admin API) in the foreground");
  c->add_option("--host", f->o.host, "listen address")->capture_default_str();
  c->add_option("--port", f->o.port, "admin API port (0: ephemeral)")->capture_default_str();
  c->add_option("--store", f->o.store_path,
                "cluster store: sqlite:PATH or PATH (embedded), etcd://HOST:PORT, memory: "
                "(empty: in memory)");
  c->add_option("--agents", f->o.agents, "node agents, host:port, comma-separated")
      ->delimiter(',')
      ->capture_default_str();
  c->add_option("--node-poll-ms", f->node_poll_ms, "agent status poll period")
      ->capture_default_str();
  c->add_option("--agent-wait-s", f->agent_wait_s, "how long start-up waits for the agents")
      ->capture_default_str();
  c->add_option("--trial-iterations", f->o.trial_iterations, "handler runs per profiling trial")
      ->capture_default_str();
  c->add_option("--profile-timeout-s", f->profile_timeout_s,
                "how long profiling waits for its trial instance to become ready")
      ->capture_default_str();
  c->add_option("--lazy-window-s", f->lazy_window_s,
                "lazy scaler window (one sample per load "
                "report)")
      ->capture_default_str();
  c->add_option("--phi-out", f->o.lazy.phi_out, "high samples in the window to add an instance")
      ->capture_default_str();
  c->add_option("--phi-in", f->o.lazy.phi_in, "low samples in the window to remove one")
      ->capture_default_str();
  c->add_option("--drain-timeout-ms", f->drain_timeout_ms, "drain time before scale-in stops")
      ->capture_default_str();
  c->add_option("--default-policy", f->o.default_policy,
                "policy set of a spec that names no `policy:` (sluice, dilu, ...)")
      ->capture_default_str()
      ->check([](const std::string& v) { return UnknownPolicyMessage(v); });
  // Several machines (issue 12; docs/platform.md "Several machines").
  c->add_flag("--discover-nodes", f->o.discover_nodes,
              "nodes are the agents registered in the store (agent --join); --agents ignored");
  c->add_flag("--elect", f->o.elect,
              "run as one of several controllers: lead through the store's leader lease");
  c->add_option("--id", f->o.id, "election id (default: host:port)");
  c->add_option("--advertise", f->o.advertise, "host:port others reach this controller at");
  c->add_option("--leader-ttl-ms", f->leader_ttl_ms, "leader lease (>= 1000)")
      ->capture_default_str();
  c->callback([f, &exit_code] {
    f->o.leader_ttl = absl::Milliseconds(f->leader_ttl_ms);
    f->o.node_poll = absl::Milliseconds(f->node_poll_ms);
    f->o.agent_wait = absl::Seconds(f->agent_wait_s);
    f->o.profile_ready_timeout = absl::Seconds(f->profile_timeout_s);
    f->o.lazy.window = absl::Seconds(f->lazy_window_s);
    f->o.drain_timeout = absl::Milliseconds(f->drain_timeout_ms);
    // Lost leadership: exit so the supervisor restarts this controller as a follower (its
    // in-memory state is stale); instances live on the agents and are re-adopted by the leader.
    f->o.on_deposed = [] {
      std::fprintf(stderr, "controller: lost the leader lease; exiting (status 75) to rejoin "
                           "as a follower\n");
      std::fflush(nullptr);
      std::_Exit(75);
    };
    exit_code = RunUntilSignal<ControllerDaemon>("controller",
                                                 [&] { return ControllerDaemon::Start(f->o); });
  });
}

}  // namespace sluice::runtime
