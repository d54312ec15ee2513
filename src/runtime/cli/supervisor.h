// `sluice up` / `sluice down`: starts the node agent, the controller and the gateway as child
// processes of one `sluice` binary (each `sluice <daemon> ...` in the foreground), records them
// in <home>/run/daemons.json and stops them again. Used by up_down_commands.cc and its test.
// Thread-compatible; RunUp blocks SIGINT/SIGTERM/SIGCHLD in the calling thread while it runs.
#ifndef SLUICE_RUNTIME_CLI_SUPERVISOR_H_
#define SLUICE_RUNTIME_CLI_SUPERVISOR_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "runtime/cli/daemons_file.h"

namespace sluice::runtime {

struct UpOptions {
  std::string home;       // resolved state directory
  std::string self_exe;   // the `sluice` binary the children run
  bool detach = false;    // children in their own session; RunUp returns once they are healthy
  int agent_port = 7072;  // 0: ephemeral (read back from the daemon's "listening" line)
  int controller_port = 7071;
  int gateway_port = 7070;
  // Extra flags for each daemon's subcommand (e.g. {"--emulated-gpus", "2"}).
  std::vector<std::string> agent_args, controller_args, gateway_args;
  // The controller's --store URI; empty: the embedded SQLite file <home>/controller.db.
  std::string store;
  absl::Duration start_timeout = absl::Seconds(60);  // per daemon: listening and healthy
  absl::Duration stop_timeout = absl::Seconds(5);    // SIGTERM -> SIGKILL
};

// Starts agent, controller (--agents = the agent) and gateway (--controller = the controller)
// in that order; each must print its listening line and answer its health check within
// start_timeout. Logs: <home>/logs/<daemon>.log (the previous one kept as .log.1). On failure
// the ones started are stopped and the error quotes the failing daemon's log tail.
absl::StatusOr<DaemonsFile> StartDaemons(const UpOptions& options);

// SIGTERM to each daemon (gateway, controller, agent), then SIGKILL to any still alive after
// `timeout`. Daemons already gone are skipped.
void StopDaemons(const DaemonsFile& file, absl::Duration timeout);

// The whole `sluice up`: refuses when daemons.json lists live processes ("already up"), replaces
// a stale file, starts, writes daemons.json; detached: returns 0; foreground: waits for
// SIGINT/SIGTERM (or a daemon's death, then exit code 1), stops them and removes the file.
// Prints progress to stdout, errors to stderr; returns the exit code.
int RunUp(const UpOptions& options);

// The whole `sluice down`: stops what daemons.json lists (asking a foreground supervisor to do
// it), removes the file. Exit code 1 with "not running" when there is no file or nothing in it
// is alive (a stale file is removed).
int RunDown(const std::string& home, absl::Duration timeout);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_CLI_SUPERVISOR_H_
