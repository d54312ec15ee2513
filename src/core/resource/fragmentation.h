// Fragmentation measures over ClusterState, per GPU / node and cluster-wide: Dilu's SM and memory
// fragments of active GPUs (ASPLOS'25 §5.5, Fig. 20) and FGD's expected unusable GPU share for a
// target workload (Weng et al., ATC'23). Used by the simulator's metrics and by experiments.
// Pure functions; thread-safe as long as the ClusterState is not being modified.
//
// Time quotas (HAS-GPU, FaST-GShare): both measures count *SM-time*, not SMs. An allocation with
// SM request r and time quota q is guaranteed r x q of the GPU's SM-time (its SMs for a fraction q
// of every scheduling window), so a GPU's guaranteed share is G_g = sum of request_i x
// time_quota_i and its free share is 1 - min(1, G_g): a GPU with one pod (s = 0.5, q = 0.4) is
// 0.8 free, since the other 0.5 of its SMs are free all the time and the pod's own 0.5 are free
// 60 % of the time. With every time_quota = 1 (Dilu, MPS, exclusive) this is exactly the
// spatial measure, G_g = sum of requests. It does not see HAS-GPU's alignment rule (a slot's free
// time is usable only by pods of that slot's SM partition: core/hasgpu/aligned_gpu.h), so for
// aligned placement it is a lower bound on what is stranded.
#ifndef SLUICE_CORE_RESOURCE_FRAGMENTATION_H_
#define SLUICE_CORE_RESOURCE_FRAGMENTATION_H_

#include <vector>

#include "absl/status/status.h"

#include "core/resource/cluster.h"

namespace sluice::core {

// ---- Dilu (§5.5) --------------------------------------------------------------------------
// The unused part of an *active* GPU (one hosting at least one allocation), as fractions of that
// GPU: sm = 1 - min(1, sum of SM request x time_quota) (free SM-time, see above);
// memory = free memory / capacity. An idle GPU is not a
// fragment (it can be handed out whole, or powered down): {0, 0}.
struct GpuFragment {
  double sm = 0;
  double memory = 0;
};
GpuFragment DiluFragment(const GpuState& gpu);
// G_g: the SM-time guaranteed to the allocations of `gpu`, sum of request x time_quota (equal to
// sum_request when every time_quota is 1). O(allocations on the GPU).
double GuaranteedSmTime(const GpuState& gpu);

// Cluster-wide Dilu fragmentation. The sums are in GPU units (e.g. sm_sum = 1.5 means one and a
// half GPUs' worth of SMs are stranded on active GPUs); the ratios average over active GPUs.
struct DiluFragmentation {
  int active_gpus = 0;
  double sm_sum = 0;      // sum of GpuFragment::sm over active GPUs
  double memory_sum = 0;  // sum of GpuFragment::memory over active GPUs
  Bytes memory_free;      // absolute free memory on active GPUs

  // Mean fragment per active GPU, in [0, 1]; 0 when no GPU is active.
  double sm() const { return active_gpus == 0 ? 0.0 : sm_sum / active_gpus; }
  double memory() const { return active_gpus == 0 ? 0.0 : memory_sum / active_gpus; }
};
// O(active GPUs).
DiluFragmentation MeasureDilu(const ClusterState& state);

// ---- FGD (Weng et al., ATC'23, "Beware of Fragmentation") ---------------------------------
// One class of task in the target workload: `gpus` GPUs (0 = a CPU-only task), each needing
// `share` of the GPU's SMs (in (0, 1]) for a fraction `time_quota` (in (0, 1]) of the time, i.e.
// share x time_quota of its SM-time, and `memory`, drawn with relative popularity `weight`.
// FGD's tasks are either fractional (gpus = 1, share < 1) or whole-GPU (share = 1), time_quota 1.
struct TaskClass {
  int gpus = 1;
  double share = 1.0;
  Bytes memory;
  double weight = 1.0;
  double time_quota = 1.0;
};
struct TargetWorkload {
  std::vector<TaskClass> tasks;
};
// OK when the list is non-empty, every weight >= 0 with a positive total, gpus >= 0,
// 0 < share <= 1, 0 < time_quota <= 1 and memory >= 0.
[[nodiscard]] absl::Status ValidateTargetWorkload(const TargetWorkload& w);

// Definition implemented (FGD §3.2, generalised with memory):
//   A GPU g's unallocated share is R_g = max(0, 1 - G_g), its free SM-time (G_g above).
//   GPU g is *usable* by task class m when R_g >= m.share x m.time_quota and g's free memory
//   >= m.memory.
//   Node n can *host* m when at least m.gpus of its GPUs are usable by m (and m.gpus >= 1).
//   F_n(m) = sum of R_g over all GPUs of n                  if n cannot host m (incl. gpus = 0),
//          = sum of R_g over GPUs of n that m cannot use   otherwise.
//   F_n(M) = sum_m p_m F_n(m), with p_m = weight_m / sum of weights: the expected amount of
//   n's unallocated GPU share that a task drawn from M cannot use. Units: GPUs.
// Unlike Dilu's measure, idle GPUs count when the task cannot use them (e.g. a 4-GPU task on a
// node with three free GPUs). Precondition: ValidateTargetWorkload(w) is OK.
double FgdNodeFragmentation(const ClusterState& state, NodeId node, const TargetWorkload& w);

struct FgdFragmentation {
  double fragment_sum = 0;     // sum over nodes of F_n(M), in GPUs
  double unallocated_sum = 0;  // sum over all GPUs of R_g, in GPUs
  // Share of the unallocated GPU resources that is fragmented, in [0, 1]; 0 when none is free.
  double ratio() const { return unallocated_sum <= 0 ? 0.0 : fragment_sum / unallocated_sum; }
};
// O(total GPUs + nodes with an active GPU x GPUs per node x task classes): a node with no
// active GPU is evaluated once per distinct node shape. Precondition as above.
FgdFragmentation MeasureFgd(const ClusterState& state, const TargetWorkload& w);

// Both measures above, sample after sample, with per-GPU and per-node results cached under
// GpuState::version: a GPU (a node) is re-measured only when one of its allocations changed
// since the last Measure. Sums run in the same order as MeasureDilu / MeasureFgd, so a reading
// equals theirs bit for bit (the simulator's per-second metrics; most GPUs do not change within
// a second). Holds no reference to the state; one meter per ClusterState (a different state of
// the same shape would hit stale entries). Not thread-safe.
class FragmentationMeter {
 public:
  struct Reading {
    DiluFragmentation dilu;
    double fgd = 0;  // MeasureFgd(state, w).ratio(); 0 without a target workload
  };
  // `w` may be empty (no FGD); otherwise ValidateTargetWorkload(w) must be OK.
  explicit FragmentationMeter(TargetWorkload w);
  Reading Measure(const ClusterState& state);

 private:
  struct GpuEntry {
    uint64_t version = 0;  // GpuState::version + 1 when measured; 0 = never
    GpuFragment dilu;
    double unallocated = 0;
    Bytes memory_free;
  };
  struct NodeEntry {
    uint64_t key = 0;  // sum of (version + 1) over the node's GPUs when measured; 0 = never
    double fragment = 0;
  };
  const GpuEntry& Gpu(const ClusterState& state, GpuId id);
  double NodeFragment(const ClusterState& state, NodeId node, bool& active);

  TargetWorkload workload_;
  double total_weight_ = 0;
  std::vector<GpuEntry> gpus_;
  std::vector<NodeEntry> nodes_;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_RESOURCE_FRAGMENTATION_H_
