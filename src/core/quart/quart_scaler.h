// QuartScaler: QUART's per-pipeline scaling policy (Fig. 4, Algorithm 1) composing key-stage
// detection, the PID corrector, CV-propagation smoothing and CPU compensation. The simulator and
// the controller feed it per-stage samples and turn its per-stage decisions (replica deltas,
// CPU-worker deltas) into effects; placement of new replicas is DispersedPlacement's job.
// Pure: time and free CPU cores come in as arguments. Not thread-safe (one owner per pipeline).
#ifndef SLUICE_CORE_QUART_QUART_SCALER_H_
#define SLUICE_CORE_QUART_QUART_SCALER_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "core/policy/pipeline.h"
#include "core/quart/cpu_compensator.h"
#include "core/quart/key_stage.h"
#include "core/quart/pid_corrector.h"
#include "core/quart/replica_smoother.h"

namespace sluice::core {

// One stage's profile and bounds.
struct QuartStageSpec {
  double service_rps = 0;         // mu_i: requests/s one GPU replica completes (> 0)
  double service_cv = 0.2;        // CV of its service time (>= 0)
  int min_replicas = 1;           // r_i,min >= 0
  int max_replicas = 64;          // >= max(1, min_replicas)
  absl::Duration latency_target;  // T_target for the stage (> 1 / mu_i, finite)
  CpuStageProfile cpu;
};

struct QuartConfig {
  std::vector<QuartStageSpec> stages;  // in pipeline order, >= 1
  KeyStageConfig key;
  PidConfig pid;
  SmootherConfig smoother;
  CpuCompensatorConfig cpu;
  absl::Duration period = absl::Seconds(1);  // decision period (> 0)
  // > 0: the PID's increment is capped at ceil(factor x the G/G/c need) over ready + starting
  // replicas, plus one probing replica when none is starting; 0: the paper's bare PID (Eq. 2-3).
  // 2.0 and why (docs/quart.md, "Corrector"): the bare PID asks for kp x error_limit = 8
  // replicas on any overload; with a profile 20 % optimistic 2.0 matches the bare PID's latency,
  // with one 2x optimistic it holds 20 % fewer replica-seconds for 7 s more over target; 1.5
  // and 1.0 trust the profile too much (49 and 83 s over target there).
  double correction_bound_factor = 2.0;  // 0 or >= 1
  // R_total of Algorithm 1 (the paper's "total resource constraint"): > 0 bounds the replicas
  // the pipeline's stages hold together (ready + starting + delta summed over the stages). When
  // a decision asks for more, its increments are cut, one replica at a time, from the stage
  // holding the most replicas per stable-floor replica (floor(lambda / mu) + 1), so a short
  // budget goes where the load is rather than to the first stages asked; existing replicas are
  // never drained to fit (but see rebalance), nor increments up to min_replicas cut. 0:
  // unbounded (the caller's cluster decides what it can place).
  int total_replicas = 0;  // >= 0
  // Not in the paper (docs/quart.md, "Rebalancing under the budget"); needs total_replicas > 0.
  // true: when the budget binds, stages holding more than they need (at rebalance_headroom x
  // the rate, below) give replicas to stages short of theirs in the same decision (the
  // smoother's hold bypassed for exactly those; RebalanceUnderBudget), unless they are over
  // target, have requests waiting beyond one per ready replica, or were scaled up within
  // rebalance_cooldown. false (default): the paper's Algorithm 1, held replicas never move.
  bool rebalance = false;
  double rebalance_headroom = 1.25;                       // >= 1, finite
  // 0 s: measured best (docs/quart.md: 10 s and 30 s were worse on every workload); > 0 keeps
  // a stage that just scaled up from giving for that long.
  absl::Duration rebalance_cooldown = absl::ZeroDuration();  // >= 0, finite
  // true (the better rule measured, docs/quart.md): every stage's need is sized from
  // max(entry rate, its own rate), InferLine's way, and scaled down to its proportional share
  // of R_total when the needs together exceed it; a donor keeps its share, and once the budget
  // is full a stage below its share takes replicas too, not only the stages FitTotal cut.
  // false: a donor keeps its need at its own arrival rate; only cut stages take.
  bool rebalance_from_entry = true;
};

// What was measured at one stage over the last window (the pipeline-policy contract's sample).
using StageSample = PipelineStageSample;

// The decision for one stage. ready + starting + replica_delta always lies in
// [min_replicas, max_replicas] (property-tested).
struct StageDecision {
  bool key = false;
  int replica_delta = 0;             // > 0 start replicas, < 0 drain replicas
  int cpu_worker_delta = 0;          // > 0 start CPU workers, < 0 hand them back
  bool cpu_escalated = false;        // CPU could not (or may no longer) absorb the shortage
  absl::Duration estimated_latency;  // the key-stage estimate (wait + service)
  double predicted_cv = 0;           // arrival CV used for sizing: max(measured, propagated)
};

struct QuartDecision {
  std::vector<StageDecision> stages;  // one per stage, in order
  std::vector<int> key_stages;
};

class QuartScaler {
 public:
  // InvalidArgument naming the field ("stages[2].service_rps", "pid.kp", ...) when invalid.
  static absl::StatusOr<std::unique_ptr<QuartScaler>> Create(const QuartConfig& config);

  // The latest window (one sample per stage; a different count is ignored and counted in
  // rejected_samples()). Replaces the previous one. `now` is unused today (kept for the Observe
  // / Decide / NextWakeup shape every core policy has).
  void Observe(const std::vector<StageSample>& samples, absl::Time now);

  // One decision from the latest samples. Steps, per Algorithm 1: estimate and detect key
  // stages; Correct (PID on the relative latency error) scales up stages over target; Smooth
  // reclaims surplus replicas of the others after the burst-aware hold; AllocateCPU covers what
  // ready GPU replicas cannot, escalating to GPU replicas when the CPU cannot. Each window is
  // decided once: without a new Observe since the last Decide every delta is 0 (the samples'
  // ready/starting counts would be stale, and acting on them twice would double the deltas).
  QuartDecision Decide(absl::Time now, int free_cpu_cores);

  // The next time Decide has work: the period after the last decision, or earlier when a
  // smoothing hold or a CPU compensation limit falls due.
  absl::Time NextWakeup() const;

  int rejected_samples() const { return rejected_samples_; }
  const QuartConfig& config() const { return config_; }

 private:
  QuartScaler(const QuartConfig& c, std::vector<PidCorrector> pids, ReplicaSmoother smoother,
              CpuCompensator cpu)
      : config_(c),
        pids_(std::move(pids)),
        smoother_(std::move(smoother)),
        cpu_(std::move(cpu)),
        last_raised_(c.stages.size(), absl::InfinitePast()) {}
  std::vector<double> SizingCvs(const std::vector<StageEstimate>& est) const;
  void Correct(const std::vector<StageEstimate>& est, absl::Duration dt, QuartDecision& d);
  void Smooth(const std::vector<StageEstimate>& est, absl::Time now, QuartDecision& d);
  void Compensate(int free_cpu_cores, absl::Time now, QuartDecision& d);
  // Each stage's ready + starting + delta into [min_replicas, max_replicas]; the deltas.
  std::vector<int> ClampToBounds(QuartDecision& d) const;
  void FitTotal(QuartDecision& d) const;
  int RebalanceNeed(int i, double rps, double cv) const;
  std::vector<int> RebalanceNeeds(const QuartDecision& d) const;
  void Rebalance(const std::vector<StageEstimate>& est, const std::vector<int>& asked,
                 absl::Time now, QuartDecision& d) const;
  int Total(int i) const;

  QuartConfig config_;
  std::vector<PidCorrector> pids_;
  ReplicaSmoother smoother_;
  CpuCompensator cpu_;
  std::vector<StageSample> samples_;
  std::vector<absl::Time> last_raised_;  // per stage: the last decision with a delta > 0
  absl::Time last_decision_ = absl::InfinitePast();
  int rejected_samples_ = 0;
  bool fresh_ = false;  // a window arrived since the last Decide
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_QUART_QUART_SCALER_H_
