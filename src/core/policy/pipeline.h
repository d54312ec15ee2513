// PipelineScaler: a policy that scales every stage of one pipeline function together (QUART's
// key-stage scaling, Fig. 4 / Algorithm 1; InferLine's planner + tuner may use it too). A model
// served as N stage functions (issue 11) has one such object per pipeline; a PolicySet returns it
// from MakePipelineScaler() (core/registry/policy_registry.h), and the simulator and the
// controller then drive it *instead of* the stages' per-function HorizontalScalers: each sampling
// interval Observe() with one sample per stage, then Decide(), then apply the per-stage deltas
// (new GPU replicas go through the set's placement with InstanceDemand::key_stage set for the
// decision's key stages; negative deltas drain; CPU-worker deltas start or stop CPU workers on
// nodes with free cores). Policies that scale stages independently (INFless, Cocktail, Dilu,
// HAS-GPU) return no PipelineScaler: each stage is then an ordinary function.
// Time comes in as an argument. Not thread-safe: one object per pipeline, owned by one loop.
//
// CONTRACT (lead, issue 11): shared by src/core/quart, src/core/registry, src/sim/engine and
// src/runtime/controller. Extend, do not change.
#ifndef SLUICE_CORE_POLICY_PIPELINE_H_
#define SLUICE_CORE_POLICY_PIPELINE_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/time/time.h"

namespace sluice::core {

// What was measured at one stage over the last sampling window.
struct PipelineStageSample {
  double arrival_rps = 0;
  double arrival_cv = 1.0;          // CV of inter-arrival times at the stage (1 = Poisson)
  double queue_length = 0;          // requests waiting at the stage now
  absl::Duration measured_latency;  // mean sojourn of the window's departures (0: none)
  int ready_replicas = 0;           // GPU replicas serving
  int starting_replicas = 0;        // GPU replicas asked for and not yet serving
  int cpu_workers = 0;              // CPU workers serving
};

// How a stage may run on CPU cores (QUART §5.3): one worker takes `cores_per_worker` cores and
// serves at the GPU replica's rate / cpu_slowdown. cpu_slowdown 0: the stage never runs on CPU.
struct PipelineCpuProfile {
  double cpu_slowdown = 0;
  int cores_per_worker = 4;
  int max_workers = 4;
};

// One stage as a pipeline policy sees it. The stage's FunctionTraits (id, capacity_rps = one
// GPU replica's throughput, latency model, max batch, memory, min/max instances) are passed
// beside it in PipelineTraits::stages.
struct PipelineStageTraits {
  double service_cv = 0.2;         // CV of one replica's service time
  absl::Duration latency_target;   // the stage's share of the end-to-end SLO
  PipelineCpuProfile cpu;
};

// A per-stage decision. ready + starting + replica_delta stays within the stage's
// [min_instances, max_instances].
struct PipelineStageDecision {
  bool key = false;          // a key stage this decision (placement disperses its replicas)
  int replica_delta = 0;     // > 0 start GPU replicas, < 0 drain GPU replicas
  int cpu_worker_delta = 0;  // > 0 start CPU workers, < 0 stop them
};

struct PipelineDecision {
  std::vector<PipelineStageDecision> stages;  // one per stage, in pipeline order
  std::vector<int> key_stages;                // indices of the key stages
};

class PipelineScaler {
 public:
  virtual ~PipelineScaler() = default;
  virtual std::string_view name() const = 0;
  // The latest window, one sample per stage in pipeline order.
  virtual void Observe(const std::vector<PipelineStageSample>& samples, absl::Time now) = 0;
  // One decision from the latest window; `free_cpu_cores` is what the pipeline's nodes can
  // lend to CPU workers now. Deciding twice on one window returns zero deltas the second time.
  virtual PipelineDecision Decide(absl::Time now, int free_cpu_cores) = 0;
  // Next time Decide() has work without a new window (smoothing holds, CPU limits);
  // InfiniteFuture when only windows can change it.
  virtual absl::Time NextWakeup() const = 0;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_POLICY_PIPELINE_H_
