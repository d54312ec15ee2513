// Starting one daemon of `sluice up` as a child process and waiting until it serves; also used
// to start the detached supervisor. Private to src/runtime/cli (supervisor.cc,
// supervise_loop.cc). Thread-compatible; the waits poll the log and the health check (blocking,
// 50 ms steps) and give up early on a pending SIGINT/SIGTERM (see SupervisorSignals).
#ifndef SLUICE_RUNTIME_CLI_DAEMON_LAUNCH_H_
#define SLUICE_RUNTIME_CLI_DAEMON_LAUNCH_H_

#include <signal.h>
#include <sys/types.h>

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "runtime/cli/daemons_file.h"

namespace sluice::runtime::internal {

// SIGINT, SIGTERM and SIGCHLD: blocked by the supervisor, which waits for them.
sigset_t SupervisorSignals();

// posix_spawn of `exe args...`: stdin /dev/null, stdout and stderr appended to `log`, default
// signal dispositions and an empty mask; its own session (`new_session`) or process group.
absl::StatusOr<pid_t> SpawnDaemon(const std::string& exe, const std::vector<std::string>& args,
                                  const std::string& log, bool new_session);

// The last `lines` lines of `log`, joined with "\n  ".
std::string LogTail(const std::string& log, size_t lines);

// Spawns daemon `name` (`sluice <entry.args>`, log entry.log renamed to .log.1 first when
// `rotate_log`), waits for its listening line and a 200 from GET entry.health within `timeout`,
// then fills entry.pid and entry.port and pins "--port <port>" in entry.args. On failure
// entry.pid names the process still to be stopped (or 0), and the error quotes the log's tail.
absl::Status StartDaemon(const std::string& exe, const std::string& name, bool rotate_log,
                         absl::Duration timeout, DaemonEntry& entry);

// "exit code 3", "signal 9 (Killed)" from a waitpid status.
std::string DescribeExit(int wait_status);

}  // namespace sluice::runtime::internal

#endif  // SLUICE_RUNTIME_CLI_DAEMON_LAUNCH_H_
