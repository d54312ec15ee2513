// The node agent's record of its instances, <run_dir>/instances.json: per instance its pid and
// that process's start time (so a recycled pid is never mistaken for it), port, function, GPUs,
// launch (argv, env, log) and quota. The supervisor rewrites it whenever an instance starts,
// restarts or goes; a restarted agent reads it and re-adopts the processes still running
// (InstanceSupervisor::Adopt, AgentDaemon start-up). Used by instance_supervisor.cc and
// agent_daemon.cc. Thread-compatible: plain values and file I/O.
#ifndef SLUICE_RUNTIME_AGENT_INSTANCE_RECORD_H_
#define SLUICE_RUNTIME_AGENT_INSTANCE_RECORD_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "runtime/agent/instance_supervisor.h"

namespace sluice::runtime {

struct InstanceRecord {
  int64_t id = 0;
  pid_t pid = 0;
  uint64_t start_ticks = 0;  // field 22 of /proc/<pid>/stat when the agent spawned it
  int restarts = 0;
  InstanceLaunch launch;
};

// The process's start time in clock ticks since boot (/proc/<pid>/stat field 22), nullopt when
// there is no such process (or it is a zombie).
std::optional<uint64_t> ProcessStartTicks(pid_t pid);

// True when `r.pid` still names the process the agent started (same start time).
bool RecordAlive(const InstanceRecord& r);

std::string InstanceRecordsToJson(const std::vector<InstanceRecord>& records);
// InvalidArgument naming `path` and the field for a malformed document.
absl::StatusOr<std::vector<InstanceRecord>> ParseInstanceRecords(const std::string& text,
                                                                 const std::string& path);
// Empty when the file does not exist.
absl::StatusOr<std::vector<InstanceRecord>> ReadInstanceRecords(const std::string& path);
// Atomically (a temporary file renamed over `path`).
[[nodiscard]] absl::Status WriteInstanceRecords(const std::string& path,
                                                const std::vector<InstanceRecord>& records);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_AGENT_INSTANCE_RECORD_H_
