// FunctionTrackingPlacement: a PlacementPolicy decorator that remembers which function each
// placed instance belongs to (from the OnAdded / OnRemoved notifications), for controllers that
// need it: the TGS controller treats every replica of the production function on a GPU as
// production. Used by the "tgs" policy set (core/registry). Not thread-safe.
#ifndef SLUICE_CORE_BASELINES_FUNCTION_TRACKING_PLACEMENT_H_
#define SLUICE_CORE_BASELINES_FUNCTION_TRACKING_PLACEMENT_H_

#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"

#include "core/policy/placement.h"

namespace sluice::core {

class FunctionTrackingPlacement final : public PlacementPolicy {
 public:
  // Precondition: `inner` is non-null.
  explicit FunctionTrackingPlacement(std::unique_ptr<PlacementPolicy> inner)
      : inner_(std::move(inner)) {}

  std::string_view name() const override { return inner_->name(); }
  absl::StatusOr<std::vector<GpuId>> Place(const InstanceDemand& demand,
                                           const ClusterState& state) override {
    return inner_->Place(demand, state);
  }
  void OnAdded(const Allocation& a, const ClusterState& state) override;
  void OnRemoved(const Allocation& a, const ClusterState& state) override;

  // The function of a committed, not yet released instance; nullopt otherwise.
  std::optional<FunctionId> FunctionOf(InstanceId instance) const;
  PlacementPolicy& inner() { return *inner_; }

 private:
  std::unique_ptr<PlacementPolicy> inner_;
  // Per instance: its function and how many of its allocations are committed (multi-GPU).
  struct Entry {
    FunctionId function;
    int allocations = 0;
  };
  absl::flat_hash_map<InstanceId, Entry> functions_;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_BASELINES_FUNCTION_TRACKING_PLACEMENT_H_
