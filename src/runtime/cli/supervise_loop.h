// SuperviseDaemons: the supervisor's one loop (sigtimedwait on SIGCHLD/SIGINT/SIGTERM with a
// poll timeout): a daemon that dies is restarted with its recorded args after RestartBackoff's
// delay, with one log line naming it, how it ended and the delay; a crash loop is logged and
// marked in daemons.json (crash_loop, restarts). Children are reaped with their exit status;
// adopted daemons (started by an earlier supervisor) are watched through /proc.
// Private to src/runtime/cli (supervisor.cc). Single-threaded; expects SupervisorSignals blocked.
#ifndef SLUICE_RUNTIME_CLI_SUPERVISE_LOOP_H_
#define SLUICE_RUNTIME_CLI_SUPERVISE_LOOP_H_

#include <set>
#include <string>

#include "runtime/cli/daemons_file.h"
#include "runtime/cli/supervisor.h"

namespace sluice::runtime::internal {

// Supervises `file`'s daemons (`children`: the names this process spawned; the others are
// adopted) until SIGINT or SIGTERM, rewriting daemons.json (at DaemonsFilePath(o.home)) after
// every exit and restart. Returns the signal that ended it. Log lines go to stderr.
int SuperviseDaemons(const UpOptions& o, DaemonsFile& file, std::set<std::string> children);

}  // namespace sluice::runtime::internal

#endif  // SLUICE_RUNTIME_CLI_SUPERVISE_LOOP_H_
