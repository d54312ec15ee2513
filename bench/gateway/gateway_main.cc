// sluice-bench-gateway: starts a GatewayDaemon for scripts/bench-gateway (used while the `sluice`
// binary has no `gateway` subcommand).
// Usage: sluice-bench-gateway PORT CONTROLLER_HOST:PORT [MAX_BATCHES_PER_INSTANCE].
// Runs until SIGINT/SIGTERM.
#include <csignal>
#include <cstdio>
#include <cstdlib>

#include "runtime/gateway/gateway_daemon.h"

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: %s PORT CONTROLLER_HOST:PORT [MAX_BATCHES_PER_INSTANCE]\n",
                 argv[0]);
    return 2;
  }
  // Block the signals before any thread starts so that only sigwait below receives them.
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  sluice::runtime::GatewayOptions o;
  o.port = std::atoi(argv[1]);
  o.controller = argv[2];
  if (argc > 3)
    o.max_batches_per_instance = std::atoi(argv[3]);
  auto gateway = sluice::runtime::GatewayDaemon::Start(o);
  if (!gateway.ok()) {
    std::fprintf(stderr, "%s\n", gateway.status().ToString().c_str());
    return 1;
  }
  int sig = 0;
  sigwait(&set, &sig);
  (*gateway)->Stop();
  return 0;
}
