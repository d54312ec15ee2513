// PlacementPolicy: where a new instance goes. Implemented by the static baselines
// (core/baselines) and Dilu's resourcing-complementary scheduler (core/dilu); called by the
// simulator and, later, the controller, which then commit the result to ClusterState and report
// it back through OnAdded/OnRemoved so a policy may keep its own indices. Not thread-safe.
#ifndef SLUICE_CORE_POLICY_PLACEMENT_H_
#define SLUICE_CORE_POLICY_PLACEMENT_H_

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

#include "core/resource/cluster.h"

namespace sluice::core {

enum class FunctionKind { kInference, kTraining, kLlmInference };

// What one new instance needs.
struct InstanceDemand {
  FunctionId function;
  InstanceId instance;
  FunctionKind kind = FunctionKind::kInference;
  int gpus = 1;            // n_j: number of GPUs (data-parallel workers or model shards)
  Bytes memory_per_gpu;    // GPU memory on each of them
  SmQuota quota;           // per GPU
  bool same_node = false;  // all GPUs on one node (training workers, where required)
  // Pipeline stages (issue 11): the stage's index (-1: not a stage) and whether the pipeline
  // policy marked it a key stage (QUART's placement disperses key-stage replicas, §6).
  int pipeline_stage = -1;
  bool key_stage = false;
  // Nodes whose host-memory parameter store holds this function's parameters (the caller knows
  // its caches; a cache-aware placement prefers them). Empty: unknown or none.
  std::vector<NodeId> cached_on;
};

class PlacementPolicy {
 public:
  virtual ~PlacementPolicy() = default;
  virtual std::string_view name() const = 0;
  // Chooses `demand.gpus` distinct GPUs. Does not modify `state`. Returns ResourceExhausted
  // when the cluster cannot host the instance. The returned GPUs must each have room for the
  // instance's memory; caps on summed quotas are the policy's own.
  virtual absl::StatusOr<std::vector<GpuId>> Place(const InstanceDemand& demand,
                                                   const ClusterState& state) = 0;
  // Notifications after the caller committed to / released from `state`.
  virtual void OnAdded(const Allocation& a, const ClusterState& state) {}
  virtual void OnRemoved(const Allocation& a, const ClusterState& state) {}
  // An allocation's quota changed in place (vertical scaling, parking): `before` and `after`
  // differ only in quota, and `state` holds `after` already. By default, OnRemoved(before) then
  // OnAdded(after); a policy whose indices depend only on `state` may re-index once.
  virtual void OnRequota(const Allocation& before, const Allocation& after,
                         const ClusterState& state) {
    OnRemoved(before, state);
    OnAdded(after, state);
  }
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_POLICY_PLACEMENT_H_
