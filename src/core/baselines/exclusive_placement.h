// ExclusivePlacement: Kubernetes-style whole-GPU allocation (the "Exclusive" baseline). An
// instance gets `gpus` GPUs that host nothing else. Used by the "exclusive" policy set
// (core/registry). O(log nodes) per placement via IdleGpuIndex. Not thread-safe.
#ifndef SLUICE_CORE_BASELINES_EXCLUSIVE_PLACEMENT_H_
#define SLUICE_CORE_BASELINES_EXCLUSIVE_PLACEMENT_H_

#include <string_view>
#include <vector>

#include "core/baselines/idle_gpu_index.h"
#include "core/policy/placement.h"

namespace sluice::core {

// Rules:
//  - only empty GPUs whose capacity holds `memory_per_gpu`;
//  - `gpus` == 1 or `same_node`: one node with `gpus` empty GPUs, chosen by `node_order`
//    (default kMostAllocated: bin packing, fewest active nodes), its lowest-index empty GPUs;
//  - `gpus` > 1 without `same_node`: one node if any can hold them all (locality), otherwise
//    empty GPUs taken node by node in `node_order`.
// The quota in the demand is not consulted: every chosen GPU is the instance's alone.
// The index follows the ClusterState passed to Place(); the caller must report every commit and
// release through OnAdded/OnRemoved (a different ClusterState object triggers a rebuild).
class ExclusivePlacement : public PlacementPolicy {
 public:
  explicit ExclusivePlacement(NodeOrder order = NodeOrder::kMostAllocated) : order_(order) {}

  std::string_view name() const override { return "exclusive"; }
  absl::StatusOr<std::vector<GpuId>> Place(const InstanceDemand& demand,
                                           const ClusterState& state) override;
  void OnAdded(const Allocation& a, const ClusterState& state) override;
  void OnRemoved(const Allocation& a, const ClusterState& state) override;

  NodeOrder node_order() const { return order_; }
  // Brute-force check of the index against `state` (tests).
  [[nodiscard]] absl::Status CheckIndex(const ClusterState& state) const;

 private:
  void Bind(const ClusterState& state);

  NodeOrder order_;
  const ClusterState* bound_ = nullptr;
  IdleGpuIndex idle_;
};

// Validates the parts of a demand every baseline needs: gpus >= 1, memory >= 0, distinct ids.
[[nodiscard]] absl::Status ValidateDemand(const InstanceDemand& demand);

}  // namespace sluice::core

#endif  // SLUICE_CORE_BASELINES_EXCLUSIVE_PLACEMENT_H_
