// ExclusivePlacement.
#include "core/baselines/exclusive_placement.h"

#include "absl/strings/str_cat.h"

#include "common/status.h"

namespace sluice::core {

absl::Status ValidateDemand(const InstanceDemand& demand) {
  if (demand.gpus < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("instance ", demand.instance.value(), " asks for ", demand.gpus, " GPUs"));
  }
  if (demand.memory_per_gpu.count() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("instance ", demand.instance.value(), " asks for negative memory"));
  }
  return absl::OkStatus();
}

void ExclusivePlacement::Bind(const ClusterState& state) {
  if (bound_ == &state)
    return;
  bound_ = &state;
  idle_.Rebuild(state);
}

absl::StatusOr<std::vector<GpuId>> ExclusivePlacement::Place(const InstanceDemand& demand,
                                                             const ClusterState& state) {
  SLUICE_RETURN_IF_ERROR(ValidateDemand(demand));
  Bind(state);
  const Bytes mem = demand.memory_per_gpu;
  if (std::optional<NodeId> node = idle_.PickNode(demand.gpus, mem, order_)) {
    const std::vector<GpuId>& idle = idle_.idle_of(*node);
    return std::vector<GpuId>(idle.begin(), idle.begin() + demand.gpus);
  }
  if (!demand.same_node && demand.gpus > 1) {
    std::vector<GpuId> spread = idle_.PickSpread(demand.gpus, mem, order_);
    if (static_cast<int>(spread.size()) == demand.gpus)
      return spread;
  }
  return absl::ResourceExhaustedError(
      absl::StrCat("exclusive: no ", demand.gpus, " empty GPU(s) with ", mem.mib(), " MiB",
                   demand.same_node && demand.gpus > 1 ? " on one node" : "", " for instance ",
                   demand.instance.value()));
}

void ExclusivePlacement::OnAdded(const Allocation& a, const ClusterState& state) {
  if (bound_ != &state) {
    Bind(state);  // a rebuild reads the committed state, so this allocation is included
    return;
  }
  idle_.Refresh(a.gpu, state);
}

void ExclusivePlacement::OnRemoved(const Allocation& a, const ClusterState& state) {
  OnAdded(a, state);  // Refresh re-reads the GPU either way
}

absl::Status ExclusivePlacement::CheckIndex(const ClusterState& state) const {
  if (bound_ != &state)
    return absl::FailedPreconditionError("index bound to another cluster");
  return idle_.CheckConsistent(state);
}

}  // namespace sluice::core
