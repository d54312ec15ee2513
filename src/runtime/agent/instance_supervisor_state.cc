// InstanceSupervisor's state seen from outside: status views (StatusOf, List, Get, PortsInUse)
// and re-adoption (issue 12): instances recorded in the agent's run dir are adopted by a
// restarted agent instead of being killed, their liveness read from /proc (they are not its
// children), and the records rewritten when an instance's process changes. Same threading as
// instance_supervisor.cc (mu_).
#include <optional>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"

#include "runtime/agent/instance_record.h"
#include "runtime/agent/instance_supervisor.h"
#include "runtime/agent/instance_supervisor_internal.h"
#include "runtime/common/log.h"

namespace sluice::runtime {

absl::StatusOr<InstanceStatus> InstanceSupervisor::Adopt(const InstanceRecord& record) {
  absl::MutexLock lock(&mu_);
  auto it = instances_.find(record.id);
  if (it != instances_.end() && !IsTerminal(it->second->state)) {
    return absl::AlreadyExistsError(absl::StrCat("instance ", record.id, " already exists"));
  }
  if (!RecordAlive(record)) {
    return absl::FailedPreconditionError(absl::StrCat("instance ", record.id, ": pid ", record.pid,
                                                      " is gone or is another process now"));
  }
  auto inst = std::make_unique<Instance>();
  inst->id = record.id;
  inst->launch = record.launch;
  inst->pid = record.pid;
  inst->start_ticks = record.start_ticks;
  inst->adopted = true;
  inst->restarts = record.restarts;
  inst->generation = 1;
  inst->spawned_at = env_.Now();
  inst->state = InstanceState::kStarting;
  InstanceStatus status = StatusOf(*inst);
  instances_[record.id] = std::move(inst);
  return status;
}

std::optional<int> InstanceSupervisor::Reap(const Instance& inst) const {
  if (!inst.adopted)
    return TryReap(inst.pid);
  const std::optional<uint64_t> ticks = ProcessStartTicks(inst.pid);
  if (ticks.has_value() && *ticks == inst.start_ticks)
    return std::nullopt;
  return -1;
}

void InstanceSupervisor::SaveRecords() {
  if (options_.state_path.empty())
    return;
  std::vector<InstanceRecord> records;
  for (const auto& [id, inst] : instances_) {
    if (inst->pid != 0)
      records.push_back({id, inst->pid, inst->start_ticks, inst->restarts, inst->launch});
  }
  std::string text = InstanceRecordsToJson(records);
  if (text == saved_records_)
    return;
  if (absl::Status s = WriteInstanceRecords(options_.state_path, records); !s.ok()) {
    LogError("agent", "cannot record instances: ", s.message());
    return;
  }
  saved_records_ = std::move(text);
}

InstanceStatus InstanceSupervisor::StatusOf(const Instance& inst) const {
  InstanceStatus s;
  s.id = inst.id;
  s.function = inst.launch.function;
  s.gpu_uuid = inst.launch.gpu_uuid;
  s.port = inst.launch.port;
  s.pid = inst.pid;
  s.state = inst.state;
  s.restarts = inst.restarts;
  s.exit_code = inst.exit_code;
  s.quota = inst.launch.quota;
  s.in_flight = inst.in_flight;
  s.started = inst.spawned_at;
  s.ready_after = inst.ready_after;
  s.pooled = inst.pooled;
  s.message = inst.message;
  return s;
}

std::vector<InstanceStatus> InstanceSupervisor::List() const {
  absl::MutexLock lock(&mu_);
  std::vector<InstanceStatus> out;
  for (const auto& [id, inst] : instances_)
    out.push_back(StatusOf(*inst));
  return out;
}

std::optional<InstanceStatus> InstanceSupervisor::Get(int64_t id) const {
  absl::MutexLock lock(&mu_);
  auto it = instances_.find(id);
  if (it == instances_.end())
    return std::nullopt;
  return StatusOf(*it->second);
}

std::vector<int> InstanceSupervisor::PortsInUse() const {
  absl::MutexLock lock(&mu_);
  std::vector<int> ports;
  for (const auto& [id, inst] : instances_) {
    if (!IsTerminal(inst->state))
      ports.push_back(inst->launch.port);
  }
  return ports;
}

}  // namespace sluice::runtime
