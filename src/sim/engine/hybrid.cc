// Hybrid scaling: a function whose policy makes a core::HybridScaler is scaled by it instead of
// HorizontalScaler + PlacementPolicy. At every load sample (and at the scaler's NextWakeup) the
// engine hands Decide() the function's deployed pods and applies the actions in order: kSetQuota
// changes a running instance's quota live (ClusterState, then the fluid model; no cold start),
// kAdd commits an instance at the GPU and quota the scaler chose and cold-starts it, kRemove
// drains one. An action the cluster or the function's shape rejects is skipped, counted and
// logged (`action_rejected`); the rest still apply.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

#include "common/status.h"
#include "sim/engine/engine.h"

namespace sluice::sim {
namespace {

const char* KindName(core::ScalingAction::Kind k) {
  switch (k) {
    case core::ScalingAction::Kind::kSetQuota:
      return "set_quota";
    case core::ScalingAction::Kind::kAdd:
      return "add";
    case core::ScalingAction::Kind::kRemove:
      return "remove";
  }
  return "unknown";
}

std::string QuotaText(const core::SmQuota& q) {
  return absl::StrFormat("request=%.3f limit=%.3f q=%.3f", q.request, q.limit, q.time_quota);
}

}  // namespace

void Engine::ReconcileHybrid(int fn) {
  Function& f = fns_[fn];
  std::vector<core::PodView> pods;
  pods.reserve(f.deployed.size());
  for (int32_t id : f.deployed) {
    const Instance& inst = *instances_[id];
    pods.push_back(core::PodView{inst.id(), inst.gpus().front(), inst.quota, inst.max_batch,
                                 inst.state() == InstanceState::kWarm});
  }
  const std::vector<core::ScalingAction> actions = f.hybrid->Decide(env_.Now(), pods, cluster_);
  for (const core::ScalingAction& a : actions) {
    absl::Status s = ApplyAction(fn, a);
    if (s.ok())
      continue;
    if (!absl::IsFailedPrecondition(s)) {  // the engine's own books disagree: stop the run
      Fail(std::move(s));
      return;
    }
    f.metrics.OnRejectedAction();
    Log(fn, "action_rejected kind=", KindName(a.kind), " reason=\"", s.message(), "\"");
  }
}

// FailedPrecondition = rejected (skipped); any other error is the engine's own fault.
absl::Status Engine::ApplyAction(int fn, const core::ScalingAction& a) {
  switch (a.kind) {
    case core::ScalingAction::Kind::kSetQuota:
      return ApplySetQuota(fn, a);
    case core::ScalingAction::Kind::kAdd:
      return ApplyAdd(fn, a);
    case core::ScalingAction::Kind::kRemove: {
      absl::StatusOr<int32_t> id = DeployedOf(fn, a.instance);
      if (!id.ok())
        return id.status();
      Drain(*id);
      return absl::OkStatus();
    }
  }
  return absl::FailedPreconditionError("unknown action kind");
}

absl::StatusOr<int32_t> Engine::DeployedOf(int fn, common::InstanceId instance) const {
  const int64_t id = instance.valid() ? instance.value() : -1;
  if (id < 0 || id >= static_cast<int64_t>(instances_.size()) || instances_[id]->function() != fn ||
      !instances_[id]->deployed()) {
    return absl::FailedPreconditionError(
        absl::StrCat("instance ", id, " is not a deployed instance of this function"));
  }
  return static_cast<int32_t>(id);
}

// A vertical step: the books first (ClusterState, which may refuse), then the placement
// policy's indices (told as a removal of the old allocation and an addition of the new one),
// the cost meter and the fluid model, which carries the work item's progress over.
absl::Status Engine::ApplySetQuota(int fn, const core::ScalingAction& a) {
  SLUICE_ASSIGN_OR_RETURN(const int32_t id, DeployedOf(fn, a.instance));
  Instance& inst = *instances_[id];
  const core::SmQuota old = inst.quota;
  if (a.quota == old)
    return absl::OkStatus();
  const double before = AllocatedOn(inst.gpus());
  if (absl::Status s = cluster_.UpdateQuota(inst.id(), a.quota); !s.ok())
    return absl::FailedPreconditionError(s.message());
  allocated_share_ += AllocatedOn(inst.gpus()) - before;
  const Function& f = fns_[fn];
  for (core::GpuId g : inst.gpus()) {
    policy_->placement().OnRequota({inst.id(), f.traits.id, g, f.config->memory, old},
                                   {inst.id(), f.traits.id, g, f.config->memory, a.quota},
                                   cluster_);
  }
  Hold(fn, inst.gpus(), old, -1);
  Hold(fn, inst.gpus(), a.quota, +1);
  inst.quota = a.quota;
  shares_.SetQuota(id, a.quota);
  fns_[fn].metrics.OnVerticalScaling();
  ReportCluster();
  Log(fn, "quota inst=", id, " ", QuotaText(a.quota));
  return absl::OkStatus();
}

// A new pod where the scaler said, then the normal cold start.
absl::Status Engine::ApplyAdd(int fn, const core::ScalingAction& a) {
  const Function& f = fns_[fn];
  if (f.config->gpus != 1) {
    return absl::FailedPreconditionError(
        absl::StrCat("add names one GPU; the function needs ", f.config->gpus));
  }
  if (a.batch < 1 || a.batch > f.max_batch) {
    return absl::FailedPreconditionError(
        absl::StrCat("batch ", a.batch, " is outside [1, ", f.max_batch, "]"));
  }
  if (!a.gpu.valid() || a.gpu.value() >= cluster_.gpu_count()) {
    return absl::FailedPreconditionError(absl::StrCat("unknown GPU ", a.gpu.value()));
  }
  const common::InstanceId iid(static_cast<int64_t>(instances_.size()));
  std::vector<core::GpuId> gpus = {a.gpu};
  if (absl::Status s = Commit(fn, iid, gpus, a.quota); !s.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("GPU ", a.gpu.value(), " cannot host it (", QuotaText(a.quota), ")"));
  }
  Launch(fn, iid, std::move(gpus), a.quota, a.batch, /*initial=*/false);
  return absl::OkStatus();
}

}  // namespace sluice::sim
