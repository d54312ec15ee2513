// IdleGpuIndex: nodes bucketed by how many idle (allocation-free) GPUs they have, per GPU memory
// size, so the static baselines find whole free GPUs without scanning the cluster. Kept in sync by
// the owning placement policy through Refresh() on every committed add/remove. Not thread-safe.
#ifndef SLUICE_CORE_BASELINES_IDLE_GPU_INDEX_H_
#define SLUICE_CORE_BASELINES_IDLE_GPU_INDEX_H_

#include <cstdint>
#include <optional>
#include <set>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "core/resource/cluster.h"

namespace sluice::core {

// Which node gets the next whole GPU(s).
//  kMostAllocated: the node with the fewest idle GPUs that still has enough (bin packing: keeps
//    the number of touched nodes small, like the k8s MostAllocated scoring strategy). Default.
//  kLeastAllocated: the node with the most idle GPUs (spreading, like k8s' default
//    LeastAllocated scoring).
// Ties go to the smallest GPU memory size that fits, then the lowest node index, so placement is
// deterministic.
enum class NodeOrder { kMostAllocated, kLeastAllocated };
// "most_allocated" | "least_allocated"; InvalidArgument otherwise.
absl::StatusOr<NodeOrder> ParseNodeOrder(std::string_view text);

class IdleGpuIndex {
 public:
  // Forgets everything and indexes every GPU of `state`. O(GPUs).
  void Rebuild(const ClusterState& state);
  // Re-reads GPU `id`'s idleness from `state`. Idempotent; O(log nodes + GPUs per node).
  void Refresh(GpuId id, const ClusterState& state);

  // A node with at least `k` idle GPUs of at least `memory` capacity, by `order`.
  std::optional<NodeId> PickNode(int k, Bytes memory, NodeOrder order) const;
  // Up to `k` idle GPUs with at least `memory` capacity, taken node by node in `order` (fewer
  // than `k` when the cluster has fewer). O(k + memory sizes x GPUs per node).
  std::vector<GpuId> PickSpread(int k, Bytes memory, NodeOrder order) const;
  // Idle GPUs of `node`, ascending.
  const std::vector<GpuId>& idle_of(NodeId node) const { return idle_of_[node.value()]; }
  bool is_idle(GpuId id) const { return idle_[id.value()]; }

  // Compares the index with a brute-force scan of `state` (tests and debugging).
  [[nodiscard]] absl::Status CheckConsistent(const ClusterState& state) const;

 private:
  // Calls f(count, node) over non-empty buckets of eligible memory classes in `order`.
  template <typename F>
  void VisitNodes(int min_count, Bytes memory, NodeOrder order, F&& f) const;
  std::set<int64_t>& Bucket(int64_t node, int count) {
    return buckets_[class_of_node_[node]][count];
  }

  std::vector<int64_t> class_memory_;  // distinct GPU memory sizes (bytes), ascending
  std::vector<int> class_of_node_;
  int max_gpus_per_node_ = 0;
  // buckets_[class][c] = nodes of that memory class with exactly c >= 1 idle GPUs.
  std::vector<std::vector<std::set<int64_t>>> buckets_;
  std::vector<std::vector<GpuId>> idle_of_;  // per node, ascending
  std::vector<bool> idle_;                   // per GPU
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_BASELINES_IDLE_GPU_INDEX_H_
