// Memory-only idle instances (issue 13 item 4) and the long-tail cost metrics: parking and
// un-parking (a parked instance keeps its GPU memory and holds core::ParkedQuota() instead of its
// SM share in ClusterState, the placement's books, the cost meter and the fluid model; a request
// reaching it un-parks it at once and its first batch waits StartTraits::unpark, one token
// period), the gateway's wake from zero, the idle-memory integral and the cold-start wait.
#include <algorithm>
#include <vector>

#include "common/status.h"
#include "core/longtail/parking.h"
#include "core/longtail/pick_parking.h"
#include "sim/engine/engine.h"

namespace sluice::sim {

int Engine::ActiveCount(const Function& f) const {
  return static_cast<int>(f.deployed.size()) - f.parked_deployed;
}

// Parks and un-parks as core::PickParking decides (one rule with the controller): the warm
// instances are its candidates; loading ones hold their share and count against ActiveWanted().
void Engine::ApplyParking(int fn) {
  Function& f = fns_[fn];
  const int wanted = std::max(0, f.scaler->ActiveWanted(env_.Now()));
  if (ActiveCount(f) == wanted)
    return;
  std::vector<core::ParkingCandidate> warm;
  int loading = 0;
  for (int32_t id : f.deployed) {
    const Instance& inst = *instances_[id];
    if (inst.parked || inst.state() == InstanceState::kWarm) {
      warm.push_back({id, inst.parked, static_cast<int>(inst.outstanding()), inst.idle_since});
    } else {
      ++loading;
    }
  }
  const core::ParkingDecision d = core::PickParking(warm, wanted - loading);
  for (int64_t id : d.park)
    Park(static_cast<int32_t>(id));
  for (int64_t id : d.unpark)
    Unpark(static_cast<int32_t>(id));
}

void Engine::Requota(int32_t id, const core::SmQuota& quota) {
  Instance& inst = *instances_[id];
  const int fn = inst.function();
  const Function& f = fns_[fn];
  const core::SmQuota old = inst.quota;
  const double before = AllocatedOn(inst.gpus());
  absl::Status s = cluster_.UpdateQuota(inst.id(), quota);
  SLUICE_CHECK_MSG(s.ok(), s.ToString());  // both quotas are valid; the instance is deployed
  allocated_share_ += AllocatedOn(inst.gpus()) - before;
  for (core::GpuId g : inst.gpus()) {
    policy_->placement().OnRequota({inst.id(), f.traits.id, g, f.config->memory, old},
                                   {inst.id(), f.traits.id, g, f.config->memory, quota}, cluster_);
  }
  Hold(fn, inst.gpus(), old, -1);
  Hold(fn, inst.gpus(), quota, +1);
  inst.quota = quota;
  shares_.SetQuota(id, quota);
  ReportCluster();
}

void Engine::Park(int32_t id) {
  Instance& inst = *instances_[id];
  Requota(id, core::ParkedQuota());
  fns_[inst.function()].parked_deployed += inst.parked ? 0 : 1;
  inst.parked = true;
  fns_[inst.function()].metrics.OnPark();
  Log(inst.function(), "park inst=", id);
}

void Engine::Unpark(int32_t id) {
  Instance& inst = *instances_[id];
  Requota(id, fns_[inst.function()].quota);
  fns_[inst.function()].parked_deployed -= inst.parked ? 1 : 0;
  inst.parked = false;
  inst.wake_at = env_.Now() + start_traits_.unpark;
  fns_[inst.function()].metrics.OnUnpark();
  Log(inst.function(), "unpark inst=", id);
}

void Engine::MarkBusy(Instance& inst) {
  if (inst.is_cpu())
    return;
  CountIdle(inst, env_.Now());
  if (inst.parked && inst.state() == InstanceState::kWarm) {
    Unpark(static_cast<int32_t>(inst.id().value()));
    fns_[inst.function()].metrics.OnColdStartWait(start_traits_.unpark);
  }
}

void Engine::MarkIdle(Instance& inst) { inst.idle_since = env_.Now(); }

void Engine::CountIdle(const Instance& inst, absl::Time until) {
  const absl::Time from = std::max(inst.idle_since, start_);
  const absl::Time to = std::min(until, horizon_);
  if (inst.is_cpu() || to <= from || fns_[inst.function()].is_training())
    return;
  const double gib = static_cast<double>(fns_[inst.function()].config->memory.count()) /
                     static_cast<double>(core::Bytes::GiB(1).count());
  fns_[inst.function()].metrics.OnIdleMemory(gib * static_cast<double>(inst.gpus().size()) *
                                             absl::ToDoubleSeconds(to - from));
}

void Engine::WakeFromZero(int fn) {
  Function& f = fns_[fn];
  if (!start_traits_.wake_from_zero || after_horizon_ || f.scaler == nullptr ||
      f.pipeline_scaled || !f.deployed.empty() || f.config->max_instances < 1) {
    return;
  }
  absl::Status s = PlaceInstance(fn, /*initial=*/false);
  if (absl::IsResourceExhausted(s)) {
    Log(fn, "place_failed deployed=0 desired=1");
  } else if (!s.ok()) {
    Fail(std::move(s));
  } else {
    Log(fn, "wake_from_zero");
  }
}

}  // namespace sluice::sim
