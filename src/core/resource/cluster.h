// Resource model of the policy core: GPU, node and cluster specs, SM <request, limit> quotas,
// allocations, and ClusterState, the book of which instance holds what on which GPU. Every
// placement policy reads ClusterState; the simulator and the controller own one and commit
// decisions to it. Not thread-safe: owned by one loop.
#ifndef SLUICE_CORE_RESOURCE_CLUSTER_H_
#define SLUICE_CORE_RESOURCE_CLUSTER_H_

#include <span>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"

#include "common/ids.h"
#include "common/units.h"

namespace sluice::core {

using common::Bandwidth;
using common::Bytes;
using common::FunctionId;
using common::GpuId;
using common::InstanceId;
using common::NodeId;

struct GpuSpec {
  std::string model = "A100-40GB";
  int sm_count = 108;
  Bytes memory = Bytes::GiB(40);
};

struct NodeSpec {
  std::string name;
  int gpu_count = 4;
  GpuSpec gpu;
  int cpu_cores = 64;
  Bytes host_memory = Bytes::GiB(256);
  Bandwidth storage_bandwidth = Bandwidth::GiBPerSecond(2);  // model loads from disk
  Bandwidth pcie_bandwidth = Bandwidth::GiBPerSecond(16);    // model loads from host cache
};

struct ClusterSpec {
  std::vector<NodeSpec> nodes;
  // `count` identical nodes named "<prefix>-<i>".
  static ClusterSpec Uniform(int count, const NodeSpec& node, const std::string& prefix = "node");
};

// SM quota as a continuous fraction of one GPU (Dilu Table 1), with HAS-GPU's spatio-temporal
// quota beside it. HAS-GPU's P_i = (b_i, s_i, q_i): the SM partition s_i is a static spatial share,
// request == limit == s_i; the time quota q_i is the fraction of each scheduling window the
// instance may run (1 = no time slicing, the only value Dilu-style policies use). The GPU time an
// instance holds is limit x time_quota (HAS-GPU's s_i x q_i; HGO sums it per GPU).
struct SmQuota {
  double request = 1.0;
  double limit = 1.0;
  double time_quota = 1.0;  // in (0, 1]
  // s x q: the fraction of the GPU's SM-time this quota can use at most.
  double held() const { return limit * time_quota; }
  friend bool operator==(const SmQuota&, const SmQuota&) = default;
};

// Dilu Table 1: exclusive = request == limit == 1; MPS = request == limit < 1;
// elastic (Sluice/Dilu) = request < limit <= 1.
enum class QuotaKind { kExclusive, kStatic, kElastic };
QuotaKind ClassifyQuota(const SmQuota& q);
// OK when 0 < request <= limit <= 1 and 0 < time_quota <= 1.
[[nodiscard]] absl::Status ValidateQuota(const SmQuota& q);

// One instance's share of one GPU. A multi-GPU instance holds one Allocation per GPU.
struct Allocation {
  InstanceId instance;
  FunctionId function;
  GpuId gpu;
  Bytes memory;
  SmQuota quota;
};

struct GpuState {
  GpuId id;
  NodeId node;
  GpuSpec spec;
  double sum_request = 0;
  double sum_limit = 0;
  double sum_held = 0;  // sum of limit x time_quota: HAS-GPU's H_G (HGO)
  Bytes memory_used;
  std::vector<Allocation> allocations;  // small: a handful of co-located instances
  // Bumped by every change of the allocations (add, remove, quota): a cache key for per-GPU
  // measures (FragmentationMeter).
  uint64_t version = 0;

  bool active() const { return !allocations.empty(); }
  Bytes memory_free() const { return spec.memory - memory_used; }
};

class ClusterState {
 public:
  explicit ClusterState(const ClusterSpec& spec);

  const ClusterSpec& spec() const { return spec_; }
  int gpu_count() const { return static_cast<int>(gpus_.size()); }
  int node_count() const { return static_cast<int>(spec_.nodes.size()); }
  // Precondition: 0 <= id < gpu_count().
  const GpuState& gpu(GpuId id) const { return gpus_[id.value()]; }
  const std::vector<GpuState>& gpus() const { return gpus_; }
  // GPUs of a node, in index order.
  std::span<const GpuId> gpus_of(NodeId node) const;
  // GPUs hosting at least one allocation, in no particular order. O(1) maintained.
  const std::vector<GpuId>& active_gpus() const { return active_; }

  // Commits an allocation. Fails (changing nothing) if the GPU is unknown, the memory would
  // exceed the GPU's capacity, the quota is invalid, or the instance already holds that GPU.
  // Oversubscription caps (sum of requests/limits) are the policy's business, not checked here.
  [[nodiscard]] absl::Status Add(const Allocation& a);
  // Changes the quota of `instance` on every GPU it holds (vertical scaling: HAS-GPU's time-quota
  // steps, a new <request, limit>), keeping the per-GPU sums. Fails (changing nothing) if the
  // instance is unknown or the quota invalid. Caps are the policy's business, as for Add.
  [[nodiscard]] absl::Status UpdateQuota(InstanceId instance, const SmQuota& quota);
  // Releases every allocation of `instance`. Returns the released allocations.
  std::vector<Allocation> Remove(InstanceId instance);
  // GPUs held by `instance` (empty if none).
  std::vector<GpuId> GpusOf(InstanceId instance) const;

 private:
  void MarkActive(GpuId id);
  void MarkIdle(GpuId id);

  ClusterSpec spec_;
  std::vector<GpuState> gpus_;
  std::vector<std::vector<GpuId>> node_gpus_;
  std::vector<GpuId> active_;
  std::vector<int> active_pos_;  // index in active_, -1 when idle
  absl::flat_hash_map<InstanceId, std::vector<GpuId>> holdings_;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_RESOURCE_CLUSTER_H_
