// FunctionTrackingPlacement.
#include "core/baselines/function_tracking_placement.h"

namespace sluice::core {

void FunctionTrackingPlacement::OnAdded(const Allocation& a, const ClusterState& state) {
  Entry& e = functions_[a.instance];
  e.function = a.function;
  ++e.allocations;
  inner_->OnAdded(a, state);
}

void FunctionTrackingPlacement::OnRemoved(const Allocation& a, const ClusterState& state) {
  auto it = functions_.find(a.instance);
  if (it != functions_.end() && --it->second.allocations <= 0)
    functions_.erase(it);
  inner_->OnRemoved(a, state);
}

std::optional<FunctionId> FunctionTrackingPlacement::FunctionOf(InstanceId instance) const {
  auto it = functions_.find(instance);
  if (it == functions_.end())
    return std::nullopt;
  return it->second.function;
}

}  // namespace sluice::core
