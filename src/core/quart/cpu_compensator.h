// QUART's CPU compensator (§5.3, Algorithm 1 "AllocateCPU"): when a stage is short of GPU
// replicas (some were reclaimed, or new ones are still starting), CPU cores of the node absorb
// part of its load for a while; they are handed back once the ready GPU replicas suffice, or
// after max_duration, when the stage must scale on GPUs instead. Owned by QuartScaler, one per
// pipeline. Pure: time and free cores come in as arguments. Not thread-safe.
#ifndef SLUICE_CORE_QUART_CPU_COMPENSATOR_H_
#define SLUICE_CORE_QUART_CPU_COMPENSATOR_H_

#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace sluice::core {

// How a stage runs on CPU cores: one CPU worker takes `cores_per_worker` cores and serves at
// mu / cpu_slowdown (its service time is cpu_slowdown times the GPU replica's).
struct CpuStageProfile {
  double cpu_slowdown = 8.0;  // >= 1
  int cores_per_worker = 4;   // >= 1
  int max_workers = 4;        // >= 0 (0: this stage never runs on CPU)
};

// max_duration 60 s: "for a while" in the brief; long enough to cover a cold start from disk
// (tens of seconds for a QUART stage), short enough that a lasting shortage goes to GPUs.
struct CpuCompensatorConfig {
  absl::Duration max_duration = absl::Seconds(60);  // > 0, finite
};

// One stage's state this decision.
struct CpuStageView {
  double arrival_rps = 0;
  double service_rps = 0;  // mu of one GPU replica
  int ready_replicas = 0;  // GPU replicas serving now
  int cpu_workers = 0;     // CPU workers serving now
  absl::Duration target;   // the stage's latency target
  double arrival_cv = 1.0;
};

// What to do with a stage's CPU workers. `worker_delta` > 0 adds workers (cores = delta x
// cores_per_worker), < 0 hands them back. `escalate` is set when the CPU cannot (or may no
// longer) absorb the shortage: the stage needs `gpu_replicas_short` more GPU replicas.
struct CpuAction {
  int stage = 0;
  int worker_delta = 0;
  bool escalate = false;
  int gpu_replicas_short = 0;
};

// Per-stage compensation state:
//   kIdle -> kCompensating  the stage is short of ready GPU replicas and CPU workers can help
//   kCompensating -> kIdle  the shortage is gone (workers handed back)
//   kCompensating -> kExhausted  max_duration passed (workers handed back, the stage escalates)
//   kExhausted -> kIdle     the shortage is gone; no new workers start before that, so an
//                           expired compensation cannot restart at once and flap
enum class CpuCompensationState { kIdle, kCompensating, kExhausted };

class CpuCompensator {
 public:
  // InvalidArgument naming the field (`profiles[i].cpu_slowdown`, ...) when out of range.
  static absl::StatusOr<CpuCompensator> Create(const CpuCompensatorConfig& config,
                                               std::vector<CpuStageProfile> profiles);

  // The model: a stage with r GPU replicas and w CPU workers behaves as an M/M/c queue with
  // floor(r + w / slowdown) GPU-equivalent servers (conservative: fractions are dropped). The
  // GPU-equivalent replicas needed for the target (G/G/c at arrival_cv) give the shortfall d
  // over ready replicas; w = ceil(d x slowdown) workers cover it, bounded by max_workers and by
  // `free_cores`. CPU cannot absorb a stage whose CPU service time alone (slowdown / mu) exceeds
  // the target. Returns actions only for stages whose workers change or that escalate, in stage
  // order; the cores they add never exceed `free_cores`. Precondition: views.size() ==
  // profiles.size().
  std::vector<CpuAction> Decide(const std::vector<CpuStageView>& views, int free_cores,
                                absl::Time now);

  // When the oldest running compensation reaches max_duration (InfiniteFuture when none runs).
  absl::Time NextWakeup() const;

  CpuCompensationState state(int stage) const { return states_[stage].state; }

 private:
  CpuCompensator(const CpuCompensatorConfig& c, std::vector<CpuStageProfile> p)
      : config_(c), profiles_(std::move(p)), states_(profiles_.size()) {}
  CpuAction DecideStage(int i, const CpuStageView& v, int& free_cores, absl::Time now);
  struct StageState {
    CpuCompensationState state = CpuCompensationState::kIdle;
    absl::Time since;  // when kCompensating began
  };

  CpuCompensatorConfig config_;
  std::vector<CpuStageProfile> profiles_;
  std::vector<StageState> states_;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_QUART_CPU_COMPENSATOR_H_
