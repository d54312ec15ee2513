// Instance processes of the node agent: posix_spawn into a new process group with stdout and
// stderr appended to a log file (never a pipe that could fill and stall the instance), signals
// to the whole group, and non-blocking reaping. Used by InstanceSupervisor. Thread-safe (no
// shared state; each pid is reaped by whoever calls TryReap first).
#ifndef SLUICE_RUNTIME_AGENT_INSTANCE_PROCESS_H_
#define SLUICE_RUNTIME_AGENT_INSTANCE_PROCESS_H_

#include <sys/types.h>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace sluice::runtime {

struct ProcessSpec {
  std::vector<std::string> argv;  // argv[0]: a path, or a name looked up in PATH
  std::vector<std::pair<std::string, std::string>> env;  // set over the agent's environment
  std::vector<std::string> unset_env;                     // removed from it first
  std::string log_path;  // stdout and stderr, appended; created 0644
};

// Starts the process; it leads its own process group. Internal naming the program when the
// log cannot be opened or posix_spawn fails (e.g. no such program).
absl::StatusOr<pid_t> SpawnProcess(const ProcessSpec& spec);
// Sends `signal` to the process group led by `pid` (the instance and anything it started).
void SignalProcessGroup(pid_t pid, int signal);
// waitpid(WNOHANG): the exit code (128 + signal for a signal) once `pid` has exited, else
// nullopt. A pid that is not our child counts as exited with code -1.
std::optional<int> TryReap(pid_t pid);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_AGENT_INSTANCE_PROCESS_H_
