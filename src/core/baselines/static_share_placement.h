// StaticSharePlacement: fixed-share GPU sharing (the MPS-l / MPS-r and INFless-style baselines).
// Each instance holds a fixed SM share q on each of its GPUs; a GPU accepts it while the shares
// there sum to at most 1 and its memory fits. Used by the "mps-l" and "mps-r" policy sets
// (core/registry). Indexed (ShareIndex + IdleGpuIndex); not thread-safe.
#ifndef SLUICE_CORE_BASELINES_STATIC_SHARE_PLACEMENT_H_
#define SLUICE_CORE_BASELINES_STATIC_SHARE_PLACEMENT_H_

#include <string>
#include <string_view>
#include <vector>

#include "core/baselines/idle_gpu_index.h"
#include "core/baselines/share_index.h"
#include "core/policy/placement.h"

namespace sluice::core {

// Rules, for an instance with share q (the demand's quota.limit under ShareBasis::kLimit,
// quota.request under kRequest) and memory m per GPU:
//  - a GPU fits when (sum of its shares under the basis) + q <= 1 and free memory >= m;
//  - one GPU: best fit among active GPUs (least free share, to 1/1000; then least free memory;
//    then lowest id), else an empty GPU on the node picked by `node_order`;
//  - several GPUs with `same_node`: the first node met in best-fit order over active GPUs whose
//    fitting GPUs (active best-fit first, then empty) number `gpus`; else a node with `gpus`
//    empty GPUs. This walk may visit every active GPU: O(active GPUs) in the worst case;
//  - several GPUs without `same_node`: best-fit active GPUs anywhere, then empty GPUs.
// Same index contract as ExclusivePlacement: report every commit/release via OnAdded/OnRemoved.
class StaticSharePlacement : public PlacementPolicy {
 public:
  struct Options {
    std::string name = "static-share";
    ShareBasis basis = ShareBasis::kLimit;
    NodeOrder node_order = NodeOrder::kMostAllocated;
  };
  explicit StaticSharePlacement(Options options);

  std::string_view name() const override { return options_.name; }
  absl::StatusOr<std::vector<GpuId>> Place(const InstanceDemand& demand,
                                           const ClusterState& state) override;
  void OnAdded(const Allocation& a, const ClusterState& state) override;
  void OnRemoved(const Allocation& a, const ClusterState& state) override;

  const Options& options() const { return options_; }
  // The share an instance with `quota` is charged.
  double ShareOf(const SmQuota& quota) const;
  // Brute-force check of both indices against `state` (tests).
  [[nodiscard]] absl::Status CheckIndex(const ClusterState& state) const;

 private:
  void Bind(const ClusterState& state);
  std::optional<GpuId> PlaceOne(double share, Bytes memory, const ClusterState& state) const;
  std::vector<GpuId> PlaceSameNode(const InstanceDemand& demand, double share,
                                   const ClusterState& state) const;
  std::vector<GpuId> PlaceSpread(const InstanceDemand& demand, double share,
                                 const ClusterState& state) const;
  // Fitting GPUs of `node`, active best-fit first then empty ones, at most `want`.
  std::vector<GpuId> FittingOnNode(NodeId node, double share, Bytes memory, int want,
                                   const ClusterState& state) const;

  Options options_;
  const ClusterState* bound_ = nullptr;
  ShareIndex shares_;
  IdleGpuIndex idle_;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_BASELINES_STATIC_SHARE_PLACEMENT_H_
