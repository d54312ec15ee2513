// QuartPlacement: QUART's cache-aware scheduler (§6) as a PlacementPolicy over ClusterState, the
// `quart` policy set's placement (core/registry/quart_policies.h). Each stage instance takes
// whole idle GPUs (QUART deploys one stage per GPU); key-stage instances
// (InstanceDemand::key_stage) are dispersed over nodes by DispersedPlacement's KL rule (Eq.
// 8-10) and prefer InstanceDemand::cached_on nodes within cache_slack; other instances are
// packed (a caching node with room, else best fit). Driven by the simulator and the controller,
// which commit the result and report it through OnAdded/OnRemoved. Not thread-safe.
#ifndef SLUICE_CORE_QUART_QUART_PLACEMENT_H_
#define SLUICE_CORE_QUART_QUART_PLACEMENT_H_

#include <memory>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"

#include "core/policy/placement.h"
#include "core/quart/dispersed_placement.h"

namespace sluice::core {

class QuartPlacement final : public PlacementPolicy {
 public:
  // InvalidArgument naming the field when the config is invalid (cache_slack < 0).
  static absl::StatusOr<std::unique_ptr<QuartPlacement>> Create(
      const DispersedPlacementConfig& config);

  std::string_view name() const override { return "quart"; }
  // `demand.gpus` idle GPUs (no allocation, memory >= memory_per_gpu) on ONE node, chosen by
  // DispersedPlacement::Choose with the node's key-instance count; the node's lowest-index
  // fitting GPUs. InvalidArgument for gpus < 1 or negative memory; ResourceExhausted when no
  // node has room. Does not modify `state`; remembers the demand's key flag until OnAdded.
  absl::StatusOr<std::vector<GpuId>> Place(const InstanceDemand& demand,
                                           const ClusterState& state) override;
  // The caller committed / released an allocation of `state`. An instance counts as a key
  // instance of its node from its first OnAdded (if Place saw it as key) to its release. A
  // different ClusterState object rebuilds the index from it.
  void OnAdded(const Allocation& a, const ClusterState& state) override;
  void OnRemoved(const Allocation& a, const ClusterState& state) override;

  // Key instances on each node (index = NodeId value), and their D_KL from uniform (nats).
  const std::vector<int>& key_instances() const { return keys_; }
  double KeyKl() const { return KlFromUniform(keys_); }

 private:
  explicit QuartPlacement(DispersedPlacement rule) : rule_(rule) {}
  void Bind(const ClusterState& state);
  void RefreshNode(NodeId node, const ClusterState& state);
  // Up to `gpus` idle GPUs of `node` with at least `memory`, lowest index first.
  static std::vector<GpuId> FittingGpus(NodeId node, int gpus, Bytes memory,
                                        const ClusterState& state);
  // Rare path (GPUs of mixed memory sizes): an index counting only GPUs that fit `memory`.
  int ChooseFitting(const InstanceDemand& demand, const std::vector<int>& caching,
                    const ClusterState& state) const;

  struct Committed {
    NodeId node;
    bool key = false;
  };

  DispersedPlacement rule_;
  const ClusterState* bound_ = nullptr;
  DispersedNodeIndex index_{0};
  std::vector<int> keys_;
  absl::flat_hash_map<InstanceId, bool> pending_;  // placed, not yet committed: key flag
  absl::flat_hash_map<InstanceId, Committed> committed_;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_QUART_QUART_PLACEMENT_H_
