// Workload-affinity groupings for Dilu's scheduler (Algorithm 1, lines 11-12: G_WA, "GPUs hosting
// instances with high workload affinity"). DiluScheduler asks its AffinityHook for G_WA before it
// looks at the other active GPUs; new groupings plug in by implementing AffinityHook. A hook keeps
// its own indices from OnAdded/OnRemoved so Candidates() costs O(|G_WA|), not O(active GPUs).
// Not thread-safe.
#ifndef SLUICE_CORE_DILU_AFFINITY_H_
#define SLUICE_CORE_DILU_AFFINITY_H_

#include <memory>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"

#include "core/policy/placement.h"
#include "core/resource/cluster.h"

namespace sluice::core {

class AffinityHook {
 public:
  virtual ~AffinityHook() = default;
  virtual std::string_view name() const = 0;
  // Appends G_WA for `demand` to `out` (cleared by the caller), without duplicates. GPUs may be
  // full; the scheduler checks room itself.
  virtual void Candidates(const InstanceDemand& demand, const ClusterState& state,
                          std::vector<GpuId>& out) const = 0;
  // Same notifications as PlacementPolicy (the scheduler forwards them).
  virtual void OnAdded(const Allocation& a) = 0;
  virtual void OnRemoved(const Allocation& a) = 0;
};

// Which GPUs each function's instances sit on, with a count per GPU.
class FunctionGpus {
 public:
  void Add(FunctionId f, GpuId g);
  void Remove(FunctionId f, GpuId g);
  // GPUs hosting at least one instance of `f`; null or empty when none.
  const absl::flat_hash_map<GpuId, int>* Of(FunctionId f) const;
  bool Hosts(FunctionId f, GpuId g) const;

 private:
  absl::flat_hash_map<FunctionId, absl::flat_hash_map<GpuId, int>> map_;
};

// G_WA = GPUs already hosting an instance of the same function (the reading: instances of
// one function see similar load).
class SameFunctionAffinity final : public AffinityHook {
 public:
  std::string_view name() const override { return "same_function"; }
  void Candidates(const InstanceDemand& demand, const ClusterState& state,
                  std::vector<GpuId>& out) const override;
  void OnAdded(const Allocation& a) override { gpus_.Add(a.function, a.gpu); }
  void OnRemoved(const Allocation& a) override { gpus_.Remove(a.function, a.gpu); }

 private:
  FunctionGpus gpus_;
};

// G_WA = the other GPUs of multi-GPU instances (training workers, model shards) that share a GPU
// with an instance of the demand's function, minus GPUs already hosting that function. This is
// the paper's Figure (instance-2 of Func-b joins instance-2 of Func-a because instance-1 of Func-b
// sits with instance-1 of Func-a: every worker of a data-parallel job then sees similar
// interference, which limits the barrel effect) and what Dilu's published simulator does
// (find_colocated_GPUs, there for training partners only).
class PartnerWorkersAffinity final : public AffinityHook {
 public:
  std::string_view name() const override { return "partner_workers"; }
  void Candidates(const InstanceDemand& demand, const ClusterState& state,
                  std::vector<GpuId>& out) const override;
  void OnAdded(const Allocation& a) override;
  void OnRemoved(const Allocation& a) override;

 private:
  FunctionGpus gpus_;
  absl::flat_hash_map<InstanceId, std::vector<GpuId>> instance_gpus_;
};

enum class AffinityKind { kSameFunction, kPartnerWorkers };
std::unique_ptr<AffinityHook> MakeAffinityHook(AffinityKind kind);

}  // namespace sluice::core

#endif  // SLUICE_CORE_DILU_AFFINITY_H_
