// InstanceSupervisor: the node agent's instance processes: spawn, health checks, restarts with
// back-off, drain and stop, following the agent instance state machine of docs/platform.md.
// One periodic tick on an Env (every health_interval) reaps exited processes (waitpid WNOHANG),
// sends probes and moves states; probe answers may arrive on any thread.
// Thread safety: every public method may be called from any thread (`mu_` guards the table);
// probes are called from the tick and answer asynchronously (see InstanceProbe).
#ifndef SLUICE_RUNTIME_AGENT_INSTANCE_SUPERVISOR_H_
#define SLUICE_RUNTIME_AGENT_INSTANCE_SUPERVISOR_H_

#include <sys/types.h>

#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/any_invocable.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/env.h"
#include "runtime/agent/instance_config.h"
#include "runtime/agent/instance_process.h"

namespace sluice::runtime {

// Agent instance states. Transitions (docs/platform.md):
//   kStarting   -> kReady       the health check (GET /v2/health/ready) answered 200
//   kStarting   -> kRestarting  the process exited, or was not ready within start_timeout
//   kReady      -> kRestarting  the process exited, or failed `failed_checks` checks in a row
//                               (restart "on-failure" restarts any unrequested exit: a server
//                               that exits 0 has still stopped serving)
//   kStarting|kReady -> kCompleted  exit code 0 with restart "never" (training)
//   kStarting|kReady -> kFailed     non-zero exit with restart "never"
//   kRestarting -> kStarting    the back-off (100 ms doubling to 5 s) elapsed: same id, new pid
//   kRestarting -> kFailed      a restart would be the 6th within 60 s, or the respawn failed
//   kStarting|kReady|kRestarting -> kDraining  Drain(): no new work; waits until in-flight is 0
//                               (GET /sluice/v1/stats) or the drain deadline
//   kDraining   -> kStopped     SIGTERM to the process group, SIGKILL after kill_grace, reaped
//   (spawn failure at Add)     -> kFailed
//   (Adopt: a live process of an earlier agent) -> kStarting, then as above; restarts keep
//                               their count, and its exit is noticed through /proc (it is not
//                               this agent's child, so its exit code is unknown: -1)
// kStopped, kFailed and kCompleted are terminal: the record stays for status until Drain()
// (DELETE) removes it or Add() reuses its id.
enum class InstanceState { kStarting, kReady, kDraining, kRestarting, kStopped, kFailed, kCompleted };
const char* InstanceStateName(InstanceState s);
bool IsTerminal(InstanceState s);

// Health and stats probes of an instance listening on 127.0.0.1:port. `done` runs exactly once,
// later, on any thread, never inside the call (the supervisor holds its locks while calling).
class InstanceProbe {
 public:
  virtual ~InstanceProbe() = default;
  virtual void CheckReady(int port, absl::AnyInvocable<void(bool ready)> done) = 0;
  // in_flight of GET /sluice/v1/stats.
  virtual void InFlight(int port, absl::AnyInvocable<void(absl::StatusOr<int64_t>)> done) = 0;
};

struct SupervisorOptions {
  absl::Duration health_interval = absl::Milliseconds(100);  // also the reaping cadence
  absl::Duration start_timeout = absl::Seconds(60);
  int failed_checks = 3;
  absl::Duration backoff_min = absl::Milliseconds(100);
  absl::Duration backoff_max = absl::Seconds(5);
  int max_restarts = 5;                       // within restart_window
  absl::Duration restart_window = absl::Seconds(60);
  absl::Duration kill_grace = absl::Seconds(2);  // SIGTERM -> SIGKILL
  // When set, the instance records (instance_record.h) are rewritten here whenever an
  // instance's process changes, so a restarted agent can re-adopt them. Empty: none kept.
  std::string state_path;
  // Tick cadence while any instance is kStarting (a pooled cold start is ready in milliseconds;
  // waiting a whole health_interval for its first check would dominate it). Clamped to at most
  // health_interval.
  absl::Duration starting_interval = absl::Milliseconds(100);
};

// What the supervisor runs for one instance.
struct InstanceLaunch {
  std::string function;
  std::string gpu_uuid;
  int port = 0;
  bool restart_on_failure = true;  // restart "on-failure"; false = "never"
  ProcessSpec process;
  QuotaUpdate quota;  // reported only; the daemon applies it to the token server
  // Recorded for re-adoption only (the daemon applies them): every GPU in order (empty: just
  // gpu_uuid) and whether the token server treats it as an LLM instance.
  std::vector<std::string> gpus;
  bool llm = false;
  // A running child of this process (a ProcessPool process, already handed the instance) to
  // supervise instead of spawning `process` on the first start; restarts spawn `process`.
  pid_t adopt_pid = 0;
};

struct InstanceRecord;  // instance_record.h

struct InstanceStatus {
  int64_t id = 0;
  std::string function, gpu_uuid;
  int port = 0;
  pid_t pid = 0;  // 0 when no process runs
  InstanceState state = InstanceState::kStarting;
  int restarts = 0;
  std::optional<int> exit_code;  // of the latest exit (128 + signal)
  QuotaUpdate quota;
  int64_t in_flight = 0;          // from the latest stats probe
  absl::Time started;             // Env time of the latest spawn
  std::optional<absl::Duration> ready_after;  // spawn (or adoption) -> ready of the latest start
  bool pooled = false;            // the latest start adopted a pre-started process
  std::string message;            // why it restarted or failed
};

class InstanceSupervisor {
 public:
  // Starts the tick on `env`; `env` and `probe` are borrowed and must outlive this object.
  InstanceSupervisor(common::Env& env, InstanceProbe& probe, const SupervisorOptions& options);
  // Cancels the tick and SIGKILLs the process group of every instance still running.
  ~InstanceSupervisor();

  // Spawns the instance (state kStarting, or kFailed when the spawn fails: the status says
  // why). AlreadyExists when `id` names a non-terminal instance.
  absl::StatusOr<InstanceStatus> Add(int64_t id, InstanceLaunch launch);
  // Takes over the process of `record`, started by an earlier agent that has gone: the same id,
  // pid and launch, state kStarting (ready after its health check), restart count kept, no
  // spawn. FailedPrecondition when the process is gone or the pid now names another process
  // (start time differs); AlreadyExists when `record.id` names a non-terminal instance.
  absl::StatusOr<InstanceStatus> Adopt(const InstanceRecord& record);
  // Drains a live instance within `drain` (then SIGTERM, SIGKILL after kill_grace), or removes
  // a terminal one. NotFound when unknown.
  absl::Status Drain(int64_t id, absl::Duration drain);
  // Records a new quota for status. NotFound when unknown.
  absl::Status SetQuota(int64_t id, const QuotaUpdate& quota);
  // SIGTERM to every process, waits up to kill_grace for them (blocking), then SIGKILL; every
  // live instance ends kStopped. Not from the Env's thread while it would block its tick.
  void StopAll();

  std::vector<InstanceStatus> List() const;
  std::optional<InstanceStatus> Get(int64_t id) const;
  // Ports held by non-terminal instances.
  std::vector<int> PortsInUse() const;

 private:
  struct Instance;
  struct Guard;  // lets late probe answers and ticks find out the supervisor is gone
  using ProbeCall = absl::AnyInvocable<void()>;

  void Tick();
  void TickOne(Instance& inst, absl::Time now, std::vector<ProbeCall>& calls)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnExit(Instance& inst, int code, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void ScheduleRestart(Instance& inst, absl::Time now, const std::string& why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Respawn(Instance& inst, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Spawn(Instance& inst, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void KillForRestart(Instance& inst, absl::Time now, const std::string& why)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Terminate(Instance& inst, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  ProbeCall ReadyProbe(Instance& inst) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  ProbeCall StatsProbe(Instance& inst) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnReady(int64_t id, uint64_t generation, bool ready);
  void OnStats(int64_t id, uint64_t generation, absl::StatusOr<int64_t> in_flight);
  InstanceStatus StatusOf(const Instance& inst) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The exit code once inst's process has gone (TryReap for children; -1 for an adopted one
  // whose /proc start time no longer matches), else nullopt.
  std::optional<int> Reap(const Instance& inst) const;
  // Rewrites options_.state_path when the records differ from the last written ones.
  void SaveRecords() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  common::Env& env_;
  InstanceProbe& probe_;
  const SupervisorOptions options_;
  std::shared_ptr<Guard> guard_;
  mutable absl::Mutex mu_;
  std::map<int64_t, std::unique_ptr<Instance>> instances_ ABSL_GUARDED_BY(mu_);
  common::Env::TimerId timer_ ABSL_GUARDED_BY(mu_) = 0;
  std::string saved_records_ ABSL_GUARDED_BY(mu_);  // the state file's last content
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_AGENT_INSTANCE_SUPERVISOR_H_
