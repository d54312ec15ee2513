// AlignedGpu: HAS-GPU's SM-partition alignment rule on one GPU (§3.1, Fig. 2), the feasibility
// check shared by HasGpuPlacement and the HybridAutoscaler (which keeps one per touched GPU as a
// scratch copy while it plans several actions). Value type; not thread-safe.
#ifndef SLUICE_CORE_HASGPU_ALIGNED_GPU_H_
#define SLUICE_CORE_HASGPU_ALIGNED_GPU_H_

#include <vector>

#include "core/resource/cluster.h"

namespace sluice::core {

// The rule (our reconstruction; the paper gives Fig. 2 and one sentence, "new pods must either
// follow existing SM configurations or introduce new SM types without exceeding this limit"):
//  - A pod's SM partition s is its quota's limit (HAS-GPU: request == limit == s); pods with the
//    same s (within 1e-6) form one *partition type*. A GPU hosts at most `max_types` types.
//  - A type with summed time quota Q_t = sum of its pods' q occupies n_t = ceil(Q_t) *slots*, each
//    a disjoint s_t-sized set of SMs; its pods time-share those slots. Feasible iff
//    sum_t n_t x s_t <= 1 (the slots fit in the GPU's SMs) and every q <= 1.
//  - "Time quotas sum to <= 1 per slot" is then exact: with preemptive time tokens, pods with
//    q_i <= 1 and sum q_i <= n fit on n identical slots in one window (McNaughton's wrap-around
//    rule), so a pod may straddle two slots of its type. We chose slots over one shared time
//    line per GPU because MPS partitions are fixed at context creation: different types never
//    trade SMs, only pods of one type trade time.
// Consequences: sum_held = sum s x q <= sum n_t s_t <= 1, and a new type needs a free s-sized
// block of SMs. Memory is checked beside it (free memory >= the pod's).
class AlignedGpu {
 public:
  static constexpr double kEps = 1e-9;

  struct Type {
    double sm = 0;
    double time_sum = 0;  // Q_t
    int pods = 0;
  };

  AlignedGpu(int max_types, Bytes memory_free) : max_types_(max_types), memory_free_(memory_free) {}
  // The committed state of `gpu` (type = limit, time = time_quota of each allocation).
  AlignedGpu(const GpuState& gpu, int max_types);

  // Largest time quota (<= 1) a new pod of partition `sm` may get here; 0 when it cannot be
  // placed (type limit reached or no s-sized block free). Memory not considered.
  double MaxNewQuota(double sm) const;
  // Largest time quota (<= 1) an existing pod of partition `sm` now at `q` may be raised to.
  double MaxQuotaFor(double sm, double q) const;
  // A new pod (sm, q, memory) fits: q <= MaxNewQuota(sm) and memory fits.
  bool Fits(double sm, double q, Bytes memory) const;
  // True when the committed pods satisfy the rule (property tests).
  bool Valid() const;

  void AddPod(double sm, double q, Bytes memory);
  void ChangeQuota(double sm, double old_q, double new_q);
  void RemovePod(double sm, double q, Bytes memory);

  // HGO, sum s x q.
  double held() const { return held_; }
  Bytes memory_free() const { return memory_free_; }
  const std::vector<Type>& types() const { return types_; }
  int max_types() const { return max_types_; }

 private:
  const Type* Find(double sm) const;
  Type* Find(double sm);
  // sum_t n_t x s_t
  double SlotSpace() const;
  // Free s-sized blocks left beside the current slots.
  int FreeBlocks(double sm) const;

  int max_types_;
  Bytes memory_free_;
  double held_ = 0;
  std::vector<Type> types_;
};

// n = ceil(Q) with float slack: 0.3 + 0.7 needs one slot, not two.
int SlotsFor(double time_sum);

}  // namespace sluice::core

#endif  // SLUICE_CORE_HASGPU_ALIGNED_GPU_H_
