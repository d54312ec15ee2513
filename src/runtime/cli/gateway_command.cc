// `sluice gateway`: flags mirror GatewayOptions (units in the flag names).
#include <memory>
#include <string>

#include "absl/time/time.h"

#include "runtime/cli/daemon_commands.h"
#include "runtime/cli/daemon_runner.h"
#include "runtime/gateway/gateway_daemon.h"

namespace sluice::runtime {
namespace {

struct GatewayFlags {
  GatewayOptions o;
  int64_t routes_poll_ms = absl::ToInt64Milliseconds(o.routes_poll);
  int64_t load_report_ms = absl::ToInt64Milliseconds(o.load_report);
};

}  // namespace

void RegisterGatewayCommand(CLI::App& app, int& exit_code) {
  auto f = std::make_shared<GatewayFlags>();
  CLI::App* c = app.add_subcommand("gateway", "run the gateway (KServe v2) in the foreground");
  c->add_option("--host", f->o.host, "listen address")->capture_default_str();
  c->add_option("--port", f->o.port, "KServe v2 port (0: ephemeral)")->capture_default_str();
  c->add_option("--controller", f->o.controller,
                "controller host:port, or several comma-separated (follows the leader)")
      ->capture_default_str();
  c->add_option("--id", f->o.id, "replica id in load reports (default: host:port)");
  c->add_option("--routes-poll-ms", f->routes_poll_ms, "route table poll period")
      ->capture_default_str();
  c->add_option("--load-report-ms", f->load_report_ms, "load report period (one scaler sample)")
      ->capture_default_str();
  c->add_option("--max-retries", f->o.max_retries, "retries on another instance after a failure")
      ->capture_default_str();
  c->add_option("--max-batches-per-instance", f->o.max_batches_per_instance,
                "batches in flight per instance (0: unlimited)")
      ->capture_default_str();
  c->callback([f, &exit_code] {
    f->o.routes_poll = absl::Milliseconds(f->routes_poll_ms);
    f->o.load_report = absl::Milliseconds(f->load_report_ms);
    exit_code =
        RunUntilSignal<GatewayDaemon>("gateway", [&] { return GatewayDaemon::Start(f->o); });
  });
}

}  // namespace sluice::runtime
