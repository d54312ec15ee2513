// `sluice agent`: flags mirror AgentOptions (units in the flag names).
#include <cstdint>
#include <memory>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/time.h"

#include "runtime/agent/agent_daemon.h"
#include "runtime/cli/daemon_commands.h"
#include "runtime/cli/daemon_runner.h"

namespace sluice::runtime {
namespace {

struct AgentFlags {
  AgentOptions o;
  std::string ports = absl::StrCat(o.instance_ports.first, "-", o.instance_ports.second);
  int64_t period_us = absl::ToInt64Microseconds(o.period);
  int64_t health_interval_ms = absl::ToInt64Milliseconds(o.health_interval);
  double start_timeout_s = absl::ToDoubleSeconds(o.start_timeout);
  int64_t node_ttl_ms = absl::ToInt64Milliseconds(o.node_ttl);
};

// "LO-HI" -> {LO, HI}; false when malformed.
bool ParsePortRange(const std::string& text, std::pair<int, int>& out) {
  std::vector<std::string> parts = absl::StrSplit(text, '-');
  return parts.size() == 2 && absl::SimpleAtoi(parts[0], &out.first) &&
         absl::SimpleAtoi(parts[1], &out.second);
}

}  // namespace

void RegisterAgentCommand(CLI::App& app, int& exit_code) {
  auto f = std::make_shared<AgentFlags>();
  CLI::App* c = app.add_subcommand("agent", "run the node agent in the foreground");
  c->add_option("--host", f->o.host, "listen address")->capture_default_str();
  c->add_option("--port", f->o.port, "agent API port (0: ephemeral)")->capture_default_str();
  c->add_option("--node", f->o.node_name, "node name")->capture_default_str();
  c->add_option("--device", f->o.device, "auto | emulated | cuda")->capture_default_str();
  c->add_option("--emulated-gpus", f->o.emulated_gpus, "emulated GPUs (no NVIDIA GPU)")
      ->capture_default_str();
  c->add_option("--emulated-sm-count", f->o.emulated_sm_count)->capture_default_str();
  c->add_option("--emulated-memory-mb", f->o.emulated_memory_mb)->capture_default_str();
  c->add_option("--instance-ports", f->ports, "LO-HI, inclusive")->capture_default_str();
  c->add_option("--period-us", f->period_us, "token-server period")->capture_default_str();
  c->add_option("--gpu-controller", f->o.gpu_controller, "dilu | static | request")
      ->capture_default_str();
  c->add_option("--run-dir", f->o.run_dir, "token socket and instance logs")->required();
  c->add_option("--intercept-lib", f->o.intercept_lib, "libsluice_cuda.so (default: located)");
  c->add_option("--emulated-dir", f->o.emulated_dir, "emulated driver directory");
  c->add_option("--spin-path", f->o.spin_path, "sluice-spin (calibration)");
  c->add_option("--bin-dir", f->o.bin_dir, "example binaries (${SLUICE_BIN_DIR} in commands)");
  c->add_option("--health-interval-ms", f->health_interval_ms)->capture_default_str();
  c->add_option("--start-timeout-s", f->start_timeout_s, "instance start-up limit")
      ->capture_default_str();
  c->add_option("--params-pretouch", f->o.params_pretouch,
                "parameter store arena: start | background | none")
      ->capture_default_str();
  c->add_flag("--params-huge-pages", f->o.params_huge_pages, "arena in huge pages");
  c->add_option("--join", f->o.join,
                "register this node in a cluster store (etcd://HOST:PORT, sqlite:PATH)");
  c->add_option("--node-ttl-ms", f->node_ttl_ms, "node registration lease (>= 1000)")
      ->capture_default_str();
  c->add_option("--advertise", f->o.advertise, "host:port the controller reaches this agent at");
  // The chain token comes from SLUICE_PARAMS_TOKEN (not a flag: it would show in ps).
  c->callback([f, &exit_code] {
    if (!ParsePortRange(f->ports, f->o.instance_ports)) {
      std::fprintf(stderr, "sluice agent: --instance-ports: want LO-HI, got '%s'\n",
                   f->ports.c_str());
      exit_code = 2;
      return;
    }
    f->o.period = absl::Microseconds(f->period_us);
    f->o.health_interval = absl::Milliseconds(f->health_interval_ms);
    f->o.start_timeout = absl::Seconds(f->start_timeout_s);
    f->o.node_ttl = absl::Milliseconds(f->node_ttl_ms);
    exit_code = RunUntilSignal<AgentDaemon>("agent", [&] { return AgentDaemon::Start(f->o); });
  });
}

}  // namespace sluice::runtime
