// `sluice up` / `sluice down`: the node agent, the controller and the gateway as child processes
// of one supervising `sluice up` process (the foreground command itself, or with --detach a
// background `sluice up --supervise` it starts), which restarts a daemon that dies (with
// back-off, supervise_loop.h) and records everything in <home>/run/daemons.json. Used by
// runtime_commands.cc and up_down_test.cc.
// Thread-compatible; RunUp blocks SIGINT/SIGTERM/SIGCHLD in the calling thread while it runs.
#ifndef SLUICE_RUNTIME_CLI_SUPERVISOR_H_
#define SLUICE_RUNTIME_CLI_SUPERVISOR_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "runtime/cli/daemons_file.h"
#include "runtime/cli/restart_backoff.h"

namespace sluice::runtime {

struct UpOptions {
  std::string home;       // resolved state directory
  std::string self_exe;   // the `sluice` binary the children run
  bool detach = false;    // start a background supervisor; RunUp returns once all are healthy
  bool supervise = false; // this process is that background supervisor (hidden --supervise)
  // This process's arguments after the binary (`up ...`): --detach re-runs them with
  // --supervise (and without --detach) as the background supervisor.
  std::vector<std::string> argv;
  int agent_port = 7072;  // 0: ephemeral (read back from the daemon's "listening" line)
  int controller_port = 7071;
  int gateway_port = 7070;
  // Extra flags for each daemon's subcommand (e.g. {"--emulated-gpus", "2"}).
  std::vector<std::string> agent_args, controller_args, gateway_args;
  // The controller's --store URI; empty: the embedded SQLite file <home>/controller.db.
  std::string store;
  absl::Duration start_timeout = absl::Seconds(60);  // per daemon: listening and healthy
  absl::Duration stop_timeout = absl::Seconds(5);    // SIGTERM -> SIGKILL
  BackoffOptions backoff;                             // restarts of dead daemons
  absl::Duration poll = absl::Milliseconds(200);      // liveness checks of adopted daemons
};

// Starts agent, controller (--agents = the agent) and gateway (--controller = the controller)
// in that order; each must print its listening line and answer its health check within
// start_timeout. Logs: <home>/logs/<daemon>.log (the previous one kept as .log.1). Each entry
// records its args with the port pinned. On failure the ones started are stopped and the error
// quotes the failing daemon's log tail.
absl::StatusOr<DaemonsFile> StartDaemons(const UpOptions& options);

// A half-dead installation (daemons.json from an earlier `sluice up` whose supervisor is gone):
// starts, in order, each daemon of `file` that is not alive, with its recorded args (same
// port), and leaves the live ones alone. Returns the names it started. FailedPrecondition when
// an entry has no recorded args (a file written before supervision).
absl::StatusOr<std::vector<std::string>> RepairDaemons(const UpOptions& options,
                                                       DaemonsFile& file);

// SIGTERM to each daemon (gateway, controller, agent), then SIGKILL to any still alive after
// `timeout`. Daemons already gone are skipped.
void StopDaemons(const DaemonsFile& file, absl::Duration timeout);

// The whole `sluice up`. With a live supervisor in daemons.json: "already up" (exit 1), naming
// any daemon it is restarting. Otherwise starts what is not running (everything, or with a
// daemons.json left by a dead supervisor only the dead daemons: RepairDaemons), writes
// daemons.json and supervises (SuperviseDaemons) until SIGINT/SIGTERM, then stops the daemons
// and removes the file (exit 0). --detach: starts `sluice <argv> --supervise` in its own
// session (log <home>/logs/supervisor.log), returns 0 once it has written daemons.json, 1 with
// its log's tail if it exits first. Prints progress to stdout, errors to stderr.
int RunUp(const UpOptions& options);

// The whole `sluice down`: SIGTERM to the supervisor first (so nothing is restarted; it stops
// the daemons and removes the file), then stops whatever daemons.json lists that is still
// alive, removes the file. Exit code 1 with "not running" when there is no file or nothing in
// it is alive (a stale file is removed).
int RunDown(const std::string& home, absl::Duration timeout);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_CLI_SUPERVISOR_H_
