// Fluid processor-sharing model of GPU compute, used by the engine: which share of each GPU every
// busy instance gets (from its <request, limit> quota, its time quota, its vertical-controller cap
// and the policy's work conservation) and how fast its current work item (a batch or a training
// iteration) progresses. Progress is kept as a fraction of the item, so share and quota changes
// mid-item carry over. Completion timers are scheduled on the Env and rescheduled only when an
// instance's rate changes. Not thread-safe: driven by the engine's single event loop.
#ifndef SLUICE_SIM_ENGINE_GPU_SHARE_H_
#define SLUICE_SIM_ENGINE_GPU_SHARE_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/time/time.h"

#include "common/env.h"
#include "core/perf/perf_model.h"
#include "core/resource/cluster.h"

namespace sluice::sim {

// One unit of work an instance executes alone on its GPUs.
struct WorkItem {
  // q = the instance's time quota (SmQuota::time_quota, 1 = no time slicing).
  enum class Kind : uint8_t {
    kBatch,      // model->BatchLatency(batch, share, q)
    kLlmBatch,   // model->PrefillLatency(prompt_tokens, share) / q +
                 //   output_tokens * model->BatchLatency(batch, share, q)   (static batching)
    kIteration,  // model->IterationTime(share) / q
    kFixed,      // fixed_seconds, whatever the share and quota (validation: exponential service)
  };
  Kind kind = Kind::kBatch;
  const core::LatencyModel* model = nullptr;  // unused for kFixed
  int batch = 1;
  int prompt_tokens = 0;  // kLlmBatch: prompt tokens of the whole batch
  int output_tokens = 1;  // kLlmBatch: decode steps (longest output in the batch)
  double fixed_seconds = 0;

  // Seconds this item takes alone, without interference, at SM share `share` in (0, 1] and time
  // quota `time_quota` in (0, 1]. The perf model prices q for batches (BatchLatency's third
  // argument); prefill and training iterations have no quota argument there, so a time slice of
  // q stretches them by 1 / q (the fluid bound). time_quota == 1 is exactly SecondsAt(share).
  double SecondsAt(double share, double time_quota = 1.0) const;
};

// What one busy instance asks of a GPU.
struct ShareDemand {
  double request = 0;     // guaranteed share (quota.request)
  double cap = 1;         // upper bound: quota.limit, or tokens / max_tokens under a controller
  double time_quota = 1;  // quota.time_quota: the instance runs this fraction of each window
};

// SM shares of the busy instances of one GPU (same order as `busy`), each in [0, cap]. What an
// instance consumes of the GPU's SM-time is share x time_quota (HAS-GPU's s x q), so:
//  1. each gets min(request, cap); if the SM-time of those (sum of share x time_quota) exceeds 1
//     the shares are scaled down proportionally;
//  2. if `work_conserving`, the SM-time left is shared among instances still below their cap in
//     proportion to request (water-filling: what a capped instance cannot take is re-shared).
// Without work conservation each runs at step 1's share (its static quota). With every
// time_quota == 1 this is the plain <request, limit> rule.
void ComputeShares(std::span<const ShareDemand> busy, bool work_conserving,
                   std::span<double> shares);

class GpuShareModel {
 public:
  class Listener {
   public:
    virtual ~Listener() = default;
    // `instance` finished its work item and is idle. The listener may Start() it again or
    // Detach() it from inside this call.
    virtual void OnWorkDone(int32_t instance) = 0;
  };

  // `env`, `perf` and `listener` must outlive the model.
  GpuShareModel(common::Env& env, const core::PerfModel& perf, int gpu_count, bool work_conserving,
                Listener& listener);

  // Makes `instance` (a dense index >= 0) resident on `gpus` with `quota`, idle, caps = limit.
  void Attach(int32_t instance, std::span<const core::GpuId> gpus, const core::SmQuota& quota);
  // Removes an idle instance from its GPUs; co-runners are re-shared.
  void Detach(int32_t instance);
  // Starts `work` on an idle, attached instance.
  void Start(int32_t instance, const WorkItem& work);

  bool busy(int32_t instance) const { return members_[instance].busy; }
  // Instances resident on `gpu`, in attach order (stable between calls).
  std::span<const int32_t> residents(core::GpuId gpu) const { return gpus_[gpu.value()].residents; }
  int busy_count(core::GpuId gpu) const { return gpus_[gpu.value()].busy; }
  // Residents of `gpu` that are not parked (memory-only idle: core::IsParked(quota)).
  int unparked_count(core::GpuId gpu) const {
    const Gpu& g = gpus_[gpu.value()];
    return static_cast<int>(g.residents.size()) - g.parked;
  }
  const core::SmQuota& quota(int32_t instance) const { return members_[instance].quota; }
  // Changes an attached instance's quota live (vertical scaling): caps return to the new
  // quota.limit, the work item in progress keeps the progress made so far and continues at the
  // rate of the new quota, co-runners are re-shared. Share-seconds up to now count at the old
  // time quota. Precondition: ValidateQuota(quota) is OK.
  void SetQuota(int32_t instance, const core::SmQuota& quota);
  // Current share of `instance` on `gpu` (0 when idle).
  double share(int32_t instance, core::GpuId gpu) const;
  // Progress rate of `instance` (items per second; 0 when idle or starved).
  double rate(int32_t instance) const {
    return members_[instance].busy ? members_[instance].rate : 0;
  }

  // Sets the caps of the residents of `gpu` (same order as residents(gpu); each clamped to
  // [0, 1]) and re-shares the GPU when a busy resident's cap moved (only busy residents' caps
  // enter the shares, and every other change re-shares at once, so the shares stand otherwise).
  void SetCaps(core::GpuId gpu, std::span<const double> caps);
  // Caps back to each resident's quota.limit.
  void ResetCaps(core::GpuId gpu);
  // SM-time `instance` used on `gpu` since the previous call (or Attach): the integral of
  // share x time_quota (share-seconds; a time-sliced instance uses its share a q-th of the time).
  double TakeUsedShareSeconds(core::GpuId gpu, int32_t instance);

 private:
  struct Shard {
    int32_t gpu = 0;
    double cap = 1;
    double share = 0;
    double slow = 1;          // interference slowdown at the last evaluation
    double base_seconds = 0;  // work.SecondsAt(share, q), without interference
    double rate = 0;          // items/s this shard alone would allow
    double used = 0;          // share x q seconds since the last take
    absl::Time used_since;
  };
  struct Member {
    bool attached = false;
    bool busy = false;
    core::SmQuota quota;
    absl::InlinedVector<Shard, 1> shards;
    WorkItem work;
    double progress = 0;  // fraction of `work` done at `since`
    double rate = 0;
    absl::Time since;
    common::Env::TimerId timer = 0;
    uint64_t stamp = 0;  // last ReshareGpu pass that touched it
  };
  struct Gpu {
    absl::InlinedVector<int32_t, 4> residents;  // inline: one cache miss less per reshare
    int busy = 0;
    int parked = 0;  // residents whose quota is core::IsParked
  };

  Shard& ShardOf(Member& m, int32_t gpu);
  // Accounts the SM-time used at the old share (x time quota `q`) up to `now`, then sets `share`.
  void SetShare(Shard& s, double share, double q, absl::Time now);
  // Recomputes shares on `gpu` and collects instances whose shard rates changed in touched_.
  void ReshareGpu(int32_t gpu);
  // Re-derives rates of touched_ instances, rescheduling completions that moved.
  void ApplyRates();
  void Reshare(const Member& m);
  void Done(int32_t instance);

  common::Env& env_;
  const core::PerfModel& perf_;
  const bool work_conserving_;
  Listener& listener_;
  std::vector<Gpu> gpus_;
  std::vector<Member> members_;
  uint64_t pass_ = 0;
  int32_t pending_reshare_ = -1;
  // Scratch, reused to avoid allocation on the hot path.
  std::vector<ShareDemand> demand_;
  std::vector<double> shares_;
  std::vector<int32_t> ids_;
  std::vector<int32_t> touched_;
};

}  // namespace sluice::sim

#endif  // SLUICE_SIM_ENGINE_GPU_SHARE_H_
