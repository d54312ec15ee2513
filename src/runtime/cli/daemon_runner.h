// RunUntilSignal: the body of `sluice controller|gateway|agent` (daemon_commands.h). Private to
// src/runtime/cli. Blocks SIGINT/SIGTERM in the calling thread before starting the daemon, so
// every thread the daemon starts inherits the mask and the sigwait here receives them.
#ifndef SLUICE_RUNTIME_CLI_DAEMON_RUNNER_H_
#define SLUICE_RUNTIME_CLI_DAEMON_RUNNER_H_

#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <memory>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"

namespace sluice::runtime {

// Starts a daemon with `start`, prints the listening line, waits for SIGINT/SIGTERM, stops it.
// Returns the exit code: 0 after a signal, 2 for InvalidArgument options, 1 other start errors.
template <typename Daemon>
int RunUntilSignal(const char* name,
                   absl::FunctionRef<absl::StatusOr<std::unique_ptr<Daemon>>()> start) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  absl::StatusOr<std::unique_ptr<Daemon>> daemon = start();
  if (!daemon.ok()) {
    std::fprintf(stderr, "sluice %s: %s\n", name, daemon.status().ToString().c_str());
    return absl::IsInvalidArgument(daemon.status()) ? 2 : 1;
  }
  std::printf("{\"event\":\"listening\",\"daemon\":\"%s\",\"port\":%d}\n", name, (*daemon)->port());
  std::fflush(stdout);
  int sig = 0;
  sigwait(&set, &sig);
  (*daemon)->Stop();
  std::printf("{\"event\":\"stopped\",\"daemon\":\"%s\",\"signal\":%d}\n", name, sig);
  std::fflush(stdout);
  return 0;
}

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_CLI_DAEMON_RUNNER_H_
