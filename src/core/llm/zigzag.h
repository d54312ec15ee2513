// BlitzScale's live layer-level scale-out (§5.2): while a new instance (target) loads layers, an
// overloaded instance (source) and the target split each batch's layers: the target runs the first
// x_i layers of batch i, the source the remaining L - x_i. The zigzag plan chooses x_i by the
// paper's ILP (minimise the mean batch latency under FIFO, with C1 full execution, C2 pipeline
// dependency and C3 layer availability), solved with GLPK under a time limit, with the best-effort
// plan (as many loaded layers as possible, at most half) as fallback and ablation. Pure.
//
// CONTRACT (lead, issue 10): used by src/sim/llm. Extend, do not change.
#ifndef SLUICE_CORE_LLM_ZIGZAG_H_
#define SLUICE_CORE_LLM_ZIGZAG_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace sluice::core::llm {

// Times are in units of one layer's execution of a unit-weight batch.
struct ZigzagInput {
  int num_layers = 32;
  // Batches queued (FIFO) during the load; batch i's per-layer time is weight[i] (prefill: linear
  // in its batched tokens, the paper's regulation parameter). Size = number of batches (>= 1).
  std::vector<double> weight;
  // Time to load one layer on the target, in the same units (the paper's normalised load time).
  double layer_load_time = 1.0;
  // Layers already on the target at time 0.
  int layers_loaded = 0;
  int max_target_layers = -1;  // cap on x_i; -1 = num_layers / 2 (the paper's "not exceeding half")
  double time_limit_ms = 40;   // solver time limit; on expiry the best integer solution is used
};

struct ZigzagPlan {
  std::vector<int> target_layers;   // x_i per batch, 0 <= x_i <= cap
  std::vector<double> finish_time;  // completion time of each batch under the plan
  double mean_latency = 0;          // mean of finish_time
  bool optimal = false;             // the ILP proved optimality within the limit
  std::string method;               // "ilp", "ilp-timeout", "best-effort"
};

// The ILP plan; falls back to (and reports) best effort when GLPK finds no integer solution in
// time. InvalidArgument naming the field for bad input (empty weight, non-positive times).
absl::StatusOr<ZigzagPlan> PlanZigzag(const ZigzagInput& input);
// Best effort: each batch in FIFO order takes min(layers loaded when it starts, cap) on the target.
absl::StatusOr<ZigzagPlan> PlanBestEffort(const ZigzagInput& input);
// Finish times of a given assignment under FIFO execution on the two instances (both plans and
// the simulator use this one schedule), respecting C2 and C3.
std::vector<double> SimulateZigzag(const ZigzagInput& input, const std::vector<int>& x);

}  // namespace sluice::core::llm

#endif  // SLUICE_CORE_LLM_ZIGZAG_H_
