// InferLineScaler: InferLine (Crankshaw et al., SoCC'20) applied to a pipeline of stage
// functions as the QUART paper compared it (§8.1), as a core::PipelineScaler. Two loops:
//  - low-frequency planner: every plan_period, each stage's replicas are re-planned from the
//    arrival envelope of the last plan_period (the "sample trace");
//  - high-frequency tuner: every window, the envelope of the last tuner_history; a stage is
//    scaled up as soon as an observed envelope exceeds what its replicas serve within its
//    budget, and down only after the need stayed below for scale_down_hold (to the most it
//    needed meanwhile).
// Both size with network calculus: arrivals at the pipeline's entry (InferLine observes the
// frontend, and every stage sees each query) form the envelope A(d) = the most queries in any d
// seconds (d = 1, 2, 4, ... windows); a stage of r replicas of throughput mu is a rate-latency
// server (rate r mu, latency 1/mu), whose delay bound is within its budget B when
// r mu >= A(d) / (d + B - 1/mu) for every d. Used by core/registry's inferline set; driven by
// the simulator and the controller. Pure; not thread-safe.
#ifndef SLUICE_CORE_BASELINES_INFERLINE_SCALER_H_
#define SLUICE_CORE_BASELINES_INFERLINE_SCALER_H_

#include <deque>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "core/policy/pipeline.h"

namespace sluice::core {

struct InferLineStage {
  double service_rps = 0;  // mu: one replica's throughput (> 0)
  absl::Duration budget;   // the stage's latency budget (> 1 / mu, finite)
  int min_replicas = 1;    // >= 0
  int max_replicas = 64;   // >= max(1, min_replicas)
};

// Defaults, ours where the paper gives none (docs/quart.md, "InferLine"):
//   plan_period 60 s: the planner re-plans on the last minute as its sample trace.
//   tuner_history 60 s: the tuner's envelopes cover the last minute (windows 1 s .. 60 s).
//   scale_down_hold 30 s: a lower need must hold this long before replicas leave.
struct InferLineConfig {
  std::vector<InferLineStage> stages;  // in pipeline order, >= 1
  absl::Duration plan_period = absl::Seconds(60);
  absl::Duration tuner_history = absl::Seconds(60);
  absl::Duration scale_down_hold = absl::Seconds(30);
};

class InferLineScaler final : public PipelineScaler {
 public:
  // InvalidArgument naming the field ("stages[1].budget", "plan_period", ...).
  static absl::StatusOr<std::unique_ptr<InferLineScaler>> Create(const InferLineConfig& config);

  std::string_view name() const override { return "inferline"; }
  // Records the entry stage's arrivals over the time since the previous window (the first
  // window counts as 1 s). A window with the wrong number of stages is ignored.
  void Observe(const std::vector<PipelineStageSample>& samples, absl::Time now) override;
  // Planner (when plan_period has passed since the last plan), then tuner, per stage; deltas
  // move ready + starting to the target. Once per window: a re-Decide returns zero deltas.
  // No key stages (InferLine has none); no CPU workers.
  PipelineDecision Decide(absl::Time now, int free_cpu_cores) override;
  absl::Time NextWakeup() const override { return absl::InfiniteFuture(); }

  // Replicas stage `i` needs for envelope arrivals over `history` ending at the latest window.
  int Needed(int i, absl::Duration history) const;
  int target(int i) const { return stages_[i].target; }

 private:
  struct Window {
    absl::Time end;
    double seconds = 1;
    double arrivals = 0;
  };
  struct StageState {
    int target = 0;
    absl::Time below_since = absl::InfiniteFuture();
    int most_needed_below = 0;  // the highest tuner need since below_since
  };
  explicit InferLineScaler(const InferLineConfig& c);
  void Tune(int i, absl::Time now);

  InferLineConfig config_;
  std::deque<Window> windows_;  // the last max(plan_period, tuner_history)
  std::vector<PipelineStageSample> samples_;
  std::vector<StageState> stages_;
  absl::Time last_plan_ = absl::InfinitePast();
  absl::Time last_observed_ = absl::InfinitePast();
  bool fresh_ = false;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_BASELINES_INFERLINE_SCALER_H_
