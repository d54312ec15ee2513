// DiluScheduler: Dilu's resourcing-complementary placement (ASPLOS'25 §3.3, Algorithm 1), a
// PlacementPolicy driven by the simulator and, later, the controller. Keeps its own indices from
// OnAdded/OnRemoved, so a placement is a bounded search, not a scan of every active GPU. Not
// thread-safe.
#ifndef SLUICE_CORE_DILU_SCHEDULER_H_
#define SLUICE_CORE_DILU_SCHEDULER_H_

#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

#include "core/dilu/affinity.h"
#include "core/dilu/fit_index.h"
#include "core/dilu/id_set.h"
#include "core/policy/placement.h"
#include "core/resource/cluster.h"

namespace sluice::core {

struct SchedulerConfig {
  // Score weights. The paper gives no values; 0.5 / 0.5 weighs SM and memory fragments equally
  // (Dilu's published simulator uses 0.6 / 0.4).
  double alpha = 0.5;
  double beta = 0.5;
  double omega = 1.0;  // max sum of SM requests per GPU (paper: 1)
  double gamma = 1.5;  // max sum of SM limits per GPU (paper: 1.5)
  bool resource_complementarity = true;
  bool workload_affinity = true;
  AffinityKind affinity = AffinityKind::kSameFunction;
  int node_candidates = 64;  // fitting active GPUs examined for a same-node multi-GPU demand
};

// Algorithm 1, per GPU the instance needs (k = 1..n_j), in three tiers:
//   1. workload affinity: SelectOptGPU over G_WA (the AffinityHook's candidates);
//   2. the other active GPUs: SelectOptGPU over G_act \ G_WA (every G_WA GPU already failed, so
//      this is the index's answer over all active GPUs);
//   3. a new (idle) GPU.
// SelectOptGPU keeps GPUs with newReqSum <= Omega, newLimSum <= gamma, newMem <= M and returns the
// minimum score = alpha (1 - newReqSum) + beta (1 - newMem / M): the least weighted fragment left,
// i.e. best fit (requests are shares of one GPU, so SM_total = 1). Ties go to the lower GPU id.
// Orderings by demand (resource_complementarity on):
//   - best fit by that score for everything that fits a fragment;
//   - memory worst fit (most free memory first) for multi-GPU LLM instances: the paper uses worst
//     fit for models that exceed one GPU fragment, to minimise pipeline stages; InstanceDemand
//     fixes the shard count and size, so "exceeds a fragment" is the multi-GPU LLM case and each
//     shard goes to the fitting GPU with the most free memory (KV-cache headroom);
//   - new GPUs: lowest id of the GPU model with the best score (smallest memory that fits), or the
//     largest memory for worst fit.
// Multi-GPU demands with same_node (training workers on one node) choose a whole node: tier 1
// nodes of G_WA, tier 2 nodes of the first `node_candidates` fitting active GPUs in index order,
// each costed as the sum of its n best GPU scores (idle GPUs on the node may top up); tier 3 the
// node with the fewest idle GPUs >= n_j (lowest id on ties). Without same_node each GPU is chosen
// independently (distinct GPUs), as in Algorithm 1's loop.
// Ablations: resource_complementarity=false is plain first fit (lowest GPU id whose request,
// limit and memory still fit; no memory/complementarity scoring, no worst fit);
// workload_affinity=false skips tier 1.
class DiluScheduler final : public PlacementPolicy {
 public:
  // InvalidArgument unless alpha, beta >= 0 with alpha + beta > 0, 0 < omega, omega <= gamma,
  // node_candidates >= 1. `hook` null = MakeAffinityHook(config.affinity).
  static absl::StatusOr<std::unique_ptr<DiluScheduler>> Create(
      const SchedulerConfig& config, std::unique_ptr<AffinityHook> hook = nullptr);

  std::string_view name() const override { return "dilu"; }
  // Contract: every allocation committed to `state` is reported through OnAdded/OnRemoved. The
  // indices are built from `state` on the first call (so a policy may join a populated state).
  // InvalidArgument for a malformed demand (gpus < 1, bad quota, negative memory).
  absl::StatusOr<std::vector<GpuId>> Place(const InstanceDemand& demand,
                                           const ClusterState& state) override;
  void OnAdded(const Allocation& a, const ClusterState& state) override;
  void OnRemoved(const Allocation& a, const ClusterState& state) override;
  // One re-index of the GPU (OnRemoved + OnAdded would re-index it twice from the same state).
  void OnRequota(const Allocation& before, const Allocation& after,
                 const ClusterState& state) override;

  const SchedulerConfig& config() const { return config_; }
  // SelectOptGPU's score of putting `need` on `gpu` (lower is better).
  double Score(const GpuState& gpu, const Room& need) const;
  // Room left on `gpu` under Omega / gamma / its memory.
  Room RoomOf(const GpuState& gpu) const;

 private:
  enum class Order { kBestFit, kWorstFitMemory, kFirstFit };
  struct Pick {
    int gpu = -1;
    double key = 0;
  };

  DiluScheduler(const SchedulerConfig& config, std::unique_ptr<AffinityHook> hook);
  // Builds the indices from `state` on first use; true when it just did.
  bool EnsureInit(const ClusterState& state);
  void BuildClasses(const ClusterState& state);  // GPU memory sizes, class and node per GPU
  void BuildIndices(int max_per_node, int nodes);
  void Reindex(int gpu, const ClusterState& state);
  void SetIdle(int gpu, bool idle);
  void Hide(int gpu);  // exclude from the current placement until Reindex
  Order OrderFor(const InstanceDemand& demand) const;
  double OrderKey(Order order, const GpuState& gpu, const Room& need) const;
  static bool Better(const Pick& a, const Pick& b);

  int PickAffinity(const InstanceDemand& d, const Room& need, Order order,
                   const ClusterState& state);
  int PickActive(const Room& need, Order order, const ClusterState& state) const;
  int PickIdle(const Room& need, Order order) const;
  absl::StatusOr<std::vector<GpuId>> PlaceOnOneNode(const InstanceDemand& d, const Room& need,
                                                    Order order, const ClusterState& state);
  // The n best fitting GPUs of `node` and their summed key; empty when fewer than n fit.
  std::vector<int> BestOnNode(int node, int n, const Room& need, Order order,
                              const ClusterState& state, double* cost) const;
  std::vector<int> BestNodeAmong(std::vector<int>& nodes, int n, const Room& need, Order order,
                                 const ClusterState& state) const;
  std::vector<int> PickIdleNode(int n, const Room& need, Order order,
                                const ClusterState& state) const;

  SchedulerConfig config_;
  std::unique_ptr<AffinityHook> hook_;
  bool initialized_ = false;
  int gpu_count_ = 0;
  std::vector<int64_t> class_memory_;  // distinct GPU memory sizes (bytes)
  std::vector<int> class_of_;          // per GPU
  std::vector<int> node_of_;           // per GPU
  std::vector<FitIndex> best_fit_;     // per class, key = score of the GPU as it is
  std::vector<FitIndex> worst_fit_;    // one, key = -free memory
  std::vector<FitIndex> first_fit_;    // one, key = GPU id (resource_complementarity off)
  std::vector<char> idle_;             // per GPU
  std::vector<char> hidden_;           // per GPU: already chosen for the demand being placed
  std::vector<IdSet> idle_gpus_;       // per class
  std::vector<int> node_idle_;         // idle GPUs per node
  std::vector<std::vector<IdSet>> idle_nodes_;  // [class][idle count] -> nodes
  std::vector<GpuId> wa_;                       // scratch for G_WA
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_DILU_SCHEDULER_H_
