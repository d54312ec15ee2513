// The supervisor's tick: reap, probe, restart, drain. Probe answers carry the instance's
// generation (bumped on every spawn and state change that makes an answer stale) so a late
// answer about an old process is ignored.
#include "runtime/agent/instance_supervisor.h"

#include <signal.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

#include "runtime/agent/instance_record.h"
#include "runtime/agent/instance_supervisor_internal.h"
#include "runtime/common/log.h"

namespace sluice::runtime {

const char* InstanceStateName(InstanceState s) {
  switch (s) {
    case InstanceState::kStarting:
      return "starting";
    case InstanceState::kReady:
      return "ready";
    case InstanceState::kDraining:
      return "draining";
    case InstanceState::kRestarting:
      return "restarting";
    case InstanceState::kStopped:
      return "stopped";
    case InstanceState::kFailed:
      return "failed";
    case InstanceState::kCompleted:
      return "completed";
  }
  return "unknown";
}

bool IsTerminal(InstanceState s) {
  return s == InstanceState::kStopped || s == InstanceState::kFailed ||
         s == InstanceState::kCompleted;
}

InstanceSupervisor::InstanceSupervisor(common::Env& env, InstanceProbe& probe,
                                       const SupervisorOptions& options)
    : env_(env), probe_(probe), options_(options), guard_(std::make_shared<Guard>()) {
  {
    absl::MutexLock g(&guard_->mu);
    guard_->self = this;
  }
  absl::MutexLock lock(&mu_);
  std::weak_ptr<Guard> weak = guard_;
  timer_ = env_.RunAt(env_.Now() + options_.health_interval, [weak] {
    if (auto g = weak.lock()) {
      absl::MutexLock l(&g->mu);
      if (g->self != nullptr)
        g->self->Tick();
    }
  });
}

InstanceSupervisor::~InstanceSupervisor() {
  {
    absl::MutexLock g(&guard_->mu);  // waits for a running tick or probe answer
    guard_->self = nullptr;
  }
  absl::MutexLock lock(&mu_);
  env_.Cancel(timer_);
  for (auto& [id, inst] : instances_) {
    if (inst->pid == 0)
      continue;
    SignalProcessGroup(inst->pid, SIGKILL);
    while (!Reap(*inst).has_value()) {
      absl::SleepFor(absl::Milliseconds(1));
    }
  }
}

void InstanceSupervisor::Tick() {
  std::vector<ProbeCall> calls;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = env_.Now();
    bool starting = false;
    for (auto& [id, inst] : instances_) {
      TickOne(*inst, now, calls);
      starting = starting || inst->state == InstanceState::kStarting;
    }
    SaveRecords();
    const absl::Duration next = starting
                                    ? std::min(options_.starting_interval, options_.health_interval)
                                    : options_.health_interval;
    std::weak_ptr<Guard> weak = guard_;
    timer_ = env_.RunAt(now + next, [weak] {
      if (auto g = weak.lock()) {
        absl::MutexLock l(&g->mu);
        if (g->self != nullptr)
          g->self->Tick();
      }
    });
  }
  for (ProbeCall& call : calls)
    call();
}

void InstanceSupervisor::TickOne(Instance& inst, absl::Time now, std::vector<ProbeCall>& calls) {
  if (inst.pid != 0) {
    if (std::optional<int> code = Reap(inst))
      OnExit(inst, *code, now);
  }
  switch (inst.state) {
    case InstanceState::kStarting:
      if (now - inst.spawned_at > options_.start_timeout) {
        KillForRestart(inst, now, "not ready within the start timeout");
      } else if (!inst.ready_pending) {
        calls.push_back(ReadyProbe(inst));
      }
      break;
    case InstanceState::kReady:
      if (!inst.ready_pending)
        calls.push_back(ReadyProbe(inst));
      if (!inst.stats_pending)
        calls.push_back(StatsProbe(inst));
      break;
    case InstanceState::kRestarting:
      if (inst.pid == 0 && now >= inst.restart_at)
        Respawn(inst, now);
      break;
    case InstanceState::kDraining:
      if (inst.pid == 0) {
        inst.state = InstanceState::kStopped;
      } else if (inst.term_at == absl::InfiniteFuture()) {
        if (now >= inst.drain_deadline) {
          Terminate(inst, now);
        } else if (!inst.stats_pending) {
          calls.push_back(StatsProbe(inst));
        }
      } else if (!inst.killed && now - inst.term_at >= options_.kill_grace) {
        SignalProcessGroup(inst.pid, SIGKILL);
        inst.killed = true;
      }
      break;
    default:
      break;
  }
}

void InstanceSupervisor::OnExit(Instance& inst, int code, absl::Time now) {
  inst.pid = 0;
  inst.exit_code = code;
  ++inst.generation;
  switch (inst.state) {
    case InstanceState::kDraining:
      inst.state = InstanceState::kStopped;
      break;
    case InstanceState::kStarting:
    case InstanceState::kReady:
      if (!inst.launch.restart_on_failure) {
        inst.state = code == 0 ? InstanceState::kCompleted : InstanceState::kFailed;
        if (code != 0)
          inst.message = absl::StrCat("exited with code ", code);
      } else {
        ScheduleRestart(inst, now, absl::StrCat("exited with code ", code));
      }
      break;
    default:  // kRestarting: killed for a failed health check; restart_at is already set
      break;
  }
}

void InstanceSupervisor::ScheduleRestart(Instance& inst, absl::Time now, const std::string& why) {
  while (!inst.restart_times.empty() &&
         now - inst.restart_times.front() > options_.restart_window) {
    inst.restart_times.pop_front();
  }
  ++inst.generation;
  if (static_cast<int>(inst.restart_times.size()) >= options_.max_restarts) {
    inst.state = InstanceState::kFailed;
    inst.message = absl::StrCat(why, "; more than ", options_.max_restarts, " restarts in ",
                                absl::FormatDuration(options_.restart_window));
    if (inst.pid != 0 && !inst.killed)
      SignalProcessGroup(inst.pid, SIGKILL);
    LogError("agent", "instance ", inst.id, " of '", inst.launch.function,
             "' failed: ", inst.message);
    return;
  }
  inst.state = InstanceState::kRestarting;
  inst.message = why;
  LogWarning("agent", "instance ", inst.id, " of '", inst.launch.function, "': ", why,
             "; restarting");
  const absl::Duration backoff = std::min(
      options_.backoff_max, options_.backoff_min * (int64_t{1} << std::min(inst.backoff_step, 20)));
  ++inst.backoff_step;
  inst.restart_at = now + backoff;
}

void InstanceSupervisor::KillForRestart(Instance& inst, absl::Time now, const std::string& why) {
  SignalProcessGroup(inst.pid, SIGKILL);
  inst.killed = true;
  ScheduleRestart(inst, now, why);
}

void InstanceSupervisor::Respawn(Instance& inst, absl::Time now) {
  inst.restart_times.push_back(now);
  ++inst.restarts;
  Spawn(inst, now);
}

void InstanceSupervisor::Spawn(Instance& inst, absl::Time now) {
  ++inst.generation;
  inst.failed_checks = 0;
  inst.killed = false;
  inst.ready_pending = inst.stats_pending = false;
  inst.restart_at = inst.term_at = inst.drain_deadline = absl::InfiniteFuture();
  inst.spawned_at = now;
  inst.ready_after.reset();
  inst.pooled = inst.launch.adopt_pid > 0;
  absl::StatusOr<pid_t> pid = inst.pooled ? absl::StatusOr<pid_t>(inst.launch.adopt_pid)
                                          : SpawnProcess(inst.launch.process);
  inst.launch.adopt_pid = 0;  // a restart spawns afresh
  if (!pid.ok()) {
    inst.state = InstanceState::kFailed;
    inst.message = std::string(pid.status().message());
    LogError("agent", "instance ", inst.id, " of '", inst.launch.function,
             "' could not start: ", inst.message);
    return;
  }
  inst.pid = *pid;
  inst.start_ticks = ProcessStartTicks(*pid).value_or(0);
  inst.adopted = false;
  inst.state = InstanceState::kStarting;
}

void InstanceSupervisor::Terminate(Instance& inst, absl::Time now) {
  SignalProcessGroup(inst.pid, SIGTERM);
  inst.term_at = now;
}

InstanceSupervisor::ProbeCall InstanceSupervisor::ReadyProbe(Instance& inst) {
  inst.ready_pending = true;
  std::weak_ptr<Guard> weak = guard_;
  const int64_t id = inst.id;
  const uint64_t gen = inst.generation;
  const int port = inst.launch.port;
  return [this, weak, id, gen, port] {
    probe_.CheckReady(port, [weak, id, gen](bool ready) {
      if (auto g = weak.lock()) {
        absl::MutexLock l(&g->mu);
        if (g->self != nullptr)
          g->self->OnReady(id, gen, ready);
      }
    });
  };
}

InstanceSupervisor::ProbeCall InstanceSupervisor::StatsProbe(Instance& inst) {
  inst.stats_pending = true;
  std::weak_ptr<Guard> weak = guard_;
  const int64_t id = inst.id;
  const uint64_t gen = inst.generation;
  const int port = inst.launch.port;
  return [this, weak, id, gen, port] {
    probe_.InFlight(port, [weak, id, gen](absl::StatusOr<int64_t> n) {
      if (auto g = weak.lock()) {
        absl::MutexLock l(&g->mu);
        if (g->self != nullptr)
          g->self->OnStats(id, gen, std::move(n));
      }
    });
  };
}

void InstanceSupervisor::OnReady(int64_t id, uint64_t generation, bool ready) {
  absl::MutexLock lock(&mu_);
  auto it = instances_.find(id);
  if (it == instances_.end() || it->second->generation != generation)
    return;
  Instance& inst = *it->second;
  inst.ready_pending = false;
  const absl::Time now = env_.Now();
  if (ready) {
    inst.failed_checks = 0;
    if (inst.state == InstanceState::kStarting) {
      inst.state = InstanceState::kReady;
      inst.ready_after = now - inst.spawned_at;
      LogInfo("agent", "instance ", inst.id, " of '", inst.launch.function, "' ready on ",
              inst.launch.gpu_uuid, " port ", inst.launch.port, " after ",
              absl::FormatDuration(*inst.ready_after));
      inst.backoff_step = 0;
    }
    return;
  }
  if (inst.state == InstanceState::kReady && ++inst.failed_checks >= options_.failed_checks) {
    KillForRestart(inst, now, absl::StrCat(inst.failed_checks, " failed health checks"));
  }
}

void InstanceSupervisor::OnStats(int64_t id, uint64_t generation,
                                 absl::StatusOr<int64_t> in_flight) {
  absl::MutexLock lock(&mu_);
  auto it = instances_.find(id);
  if (it == instances_.end() || it->second->generation != generation)
    return;
  Instance& inst = *it->second;
  inst.stats_pending = false;
  if (!in_flight.ok())
    return;
  inst.in_flight = *in_flight;
  if (inst.state == InstanceState::kDraining && inst.in_flight == 0 &&
      inst.term_at == absl::InfiniteFuture() && inst.pid != 0) {
    Terminate(inst, env_.Now());
  }
}

absl::StatusOr<InstanceStatus> InstanceSupervisor::Add(int64_t id, InstanceLaunch launch) {
  absl::MutexLock lock(&mu_);
  auto it = instances_.find(id);
  if (it != instances_.end() && !IsTerminal(it->second->state)) {
    return absl::AlreadyExistsError(absl::StrCat("instance ", id, " already exists (",
                                                 InstanceStateName(it->second->state), ")"));
  }
  auto inst = std::make_unique<Instance>();
  inst->id = id;
  inst->launch = std::move(launch);
  const absl::Time now = env_.Now();
  Spawn(*inst, now);
  InstanceStatus status = StatusOf(*inst);
  instances_[id] = std::move(inst);
  // The first readiness check comes after starting_interval, not a whole health_interval.
  if (options_.starting_interval < options_.health_interval && env_.Cancel(timer_)) {
    std::weak_ptr<Guard> weak = guard_;
    timer_ = env_.RunAt(now + options_.starting_interval, [weak] {
      if (auto g = weak.lock()) {
        absl::MutexLock l(&g->mu);
        if (g->self != nullptr)
          g->self->Tick();
      }
    });
  }
  return status;
}

absl::Status InstanceSupervisor::Drain(int64_t id, absl::Duration drain) {
  absl::MutexLock lock(&mu_);
  auto it = instances_.find(id);
  if (it == instances_.end())
    return absl::NotFoundError(absl::StrCat("no instance ", id));
  Instance& inst = *it->second;
  if (IsTerminal(inst.state)) {
    instances_.erase(it);
    return absl::OkStatus();
  }
  if (inst.state == InstanceState::kDraining)
    return absl::OkStatus();
  const bool serving = inst.state == InstanceState::kReady;
  inst.state = InstanceState::kDraining;
  inst.restart_at = absl::InfiniteFuture();
  const absl::Time now = env_.Now();
  inst.drain_deadline = serving ? now + drain : now;  // nothing to drain unless it served
  if (inst.pid == 0)
    inst.state = InstanceState::kStopped;
  return absl::OkStatus();
}

absl::Status InstanceSupervisor::SetQuota(int64_t id, const QuotaUpdate& quota) {
  absl::MutexLock lock(&mu_);
  auto it = instances_.find(id);
  if (it == instances_.end())
    return absl::NotFoundError(absl::StrCat("no instance ", id));
  it->second->launch.quota = quota;
  return absl::OkStatus();
}

void InstanceSupervisor::StopAll() {
  absl::Time deadline;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = env_.Now();
    deadline = now + options_.kill_grace;
    for (auto& [id, inst] : instances_) {
      if (IsTerminal(inst->state))
        continue;
      inst->state = InstanceState::kDraining;
      inst->restart_at = absl::InfiniteFuture();
      if (inst->pid != 0 && inst->term_at == absl::InfiniteFuture())
        Terminate(*inst, now);
    }
  }
  while (true) {
    absl::MutexLock lock(&mu_);
    const bool late = env_.Now() >= deadline;
    bool running = false;
    for (auto& [id, inst] : instances_) {
      if (inst->pid == 0)
        continue;
      if (std::optional<int> code = Reap(*inst)) {
        OnExit(*inst, *code, env_.Now());
        continue;
      }
      if (late && !inst->killed) {
        SignalProcessGroup(inst->pid, SIGKILL);
        inst->killed = true;
      }
      running = true;
    }
    for (auto& [id, inst] : instances_) {
      if (inst->state == InstanceState::kDraining && inst->pid == 0) {
        inst->state = InstanceState::kStopped;
      }
    }
    if (!running)
      return;
    mu_.Unlock();
    absl::SleepFor(absl::Milliseconds(5));
    mu_.Lock();
  }
}

}  // namespace sluice::runtime
