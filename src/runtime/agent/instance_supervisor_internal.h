// The InstanceSupervisor's private state (Guard, Instance), shared by its two source files:
// instance_supervisor.cc (tick, spawn, probes, drain) and instance_supervisor_state.cc (status
// views, re-adoption after an agent restart, the instance records). Not part of the agent's
// API; guarded by InstanceSupervisor::mu_ as the header says.
#ifndef SLUICE_RUNTIME_AGENT_INSTANCE_SUPERVISOR_INTERNAL_H_
#define SLUICE_RUNTIME_AGENT_INSTANCE_SUPERVISOR_INTERNAL_H_

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <optional>
#include <string>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

#include "runtime/agent/instance_supervisor.h"

namespace sluice::runtime {

struct InstanceSupervisor::Guard {
  absl::Mutex mu;
  InstanceSupervisor* self ABSL_GUARDED_BY(mu) = nullptr;
};

struct InstanceSupervisor::Instance {
  int64_t id = 0;
  InstanceLaunch launch;
  InstanceState state = InstanceState::kStarting;
  pid_t pid = 0;
  uint64_t start_ticks = 0;  // of pid (/proc), for the records and adopted liveness
  bool adopted = false;      // pid is not this agent's child
  uint64_t generation = 0;
  int restarts = 0;
  std::optional<int> exit_code;
  int64_t in_flight = 0;
  absl::Time spawned_at;
  std::optional<absl::Duration> ready_after;
  bool pooled = false;
  std::string message;
  int failed_checks = 0;
  bool ready_pending = false;
  bool stats_pending = false;
  int backoff_step = 0;
  absl::Time restart_at = absl::InfiniteFuture();
  std::deque<absl::Time> restart_times;
  absl::Time drain_deadline = absl::InfiniteFuture();
  absl::Time term_at = absl::InfiniteFuture();  // when SIGTERM was sent
  bool killed = false;                          // SIGKILL sent to the current pid
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_AGENT_INSTANCE_SUPERVISOR_INTERNAL_H_
