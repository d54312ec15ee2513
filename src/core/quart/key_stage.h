// Key-stage detection (QUART §5.1): per pipeline stage, the M/M/c latency estimate combined with
// the measured latency and queue, each stage's share of the pipeline latency, and which stages
// are key (their share dominates). Used by QuartScaler and, through it, by the simulator and the
// controller. Pure functions; thread-safe.
#ifndef SLUICE_CORE_QUART_KEY_STAGE_H_
#define SLUICE_CORE_QUART_KEY_STAGE_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

#include "core/quart/mmc_model.h"

namespace sluice::core {

// What is known about one stage over the last observation window.
struct StageLoad {
  double arrival_rps = 0;  // lambda_i, requests/s reaching the stage
  double service_rps = 0;  // mu_i, requests/s one replica completes
  int replicas = 0;        // r_i, ready replicas serving now
  // Measured mean sojourn (queue + service) of requests that left the stage in the window;
  // ZeroDuration when nothing was measured (then only the model and the queue count).
  absl::Duration measured_latency;
  double queue_length = 0;  // requests waiting now (not in service)
};

// How the model and the measurements are combined. Defaults and why:
//   model_weight 0.5: the M/M/c wait is a steady-state mean and reacts to a rate change at once
//     but assumes Poisson arrivals; the measured wait is the truth but lags by one window. Equal
//     weights let either one raise the alarm at half strength.
//   unstable_wait_cap 10 s: an overloaded stage has an infinite model wait; the cap keeps it the
//     largest finite value any stage can show (10 s is past every SLO in the paper's Table 1)
//     so shares stay comparable and the PID error bounded.
//   key_share_factor 1.5: a stage is key when its latency share is at least 1.5 / n (half again
//     its fair share in an n-stage pipeline); the largest share is key only if it passes too,
//     so a balanced pipeline has no key stage.
struct KeyStageConfig {
  double model_weight = 0.5;                             // in [0, 1]
  absl::Duration unstable_wait_cap = absl::Seconds(10);  // > 0
  double key_share_factor = 1.5;                         // >= 1
};

// InvalidArgument naming the field when a value is out of its range.
[[nodiscard]] absl::Status ValidateKeyStageConfig(const KeyStageConfig& config);

struct StageEstimate {
  MmcResult model;         // M/M/c figures from (lambda, mu, r)
  absl::Duration wait;     // combined queueing wait (finite, <= unstable_wait_cap)
  absl::Duration latency;  // wait + 1 / mu (the bare service time; 0 when mu is 0)
  double share = 0;        // latency / sum of latencies, in [0, 1]
  bool key = false;
};

// The combined wait per stage: model_weight x min(W_q model, cap) + (1 - model_weight) x
// max(measured wait, queue drain time), where measured wait = measured latency - 1 / mu
// (>= 0) and queue drain time = queue_length / (r mu) (the wait a newcomer sees behind the
// queue, Little's law at full service). Returns one estimate per stage, in order. Precondition:
// config validated.
std::vector<StageEstimate> EstimateStages(const std::vector<StageLoad>& stages,
                                          const KeyStageConfig& config);

// Indices of the key stages in `estimates` (ascending), possibly empty.
std::vector<int> KeyStages(const std::vector<StageEstimate>& estimates);

}  // namespace sluice::core

#endif  // SLUICE_CORE_QUART_KEY_STAGE_H_
