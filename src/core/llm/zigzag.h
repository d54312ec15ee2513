// BlitzScale's live layer-level scale-out (§5.2): while a new instance (target) loads layers, an
// overloaded instance (source) and the target split each batch's layers: the target runs the first
// x_i layers of batch i, the source the remaining L - x_i. The zigzag plan chooses x_i by the
// paper's ILP (minimise the mean batch latency under FIFO, with C1 full execution, C2 pipeline
// dependency and C3 layer availability), solved with GLPK under a time limit, with the best-effort
// plan (as many loaded layers as possible, at most half) as fallback and ablation. Pure (GLPK's
// own time limit is the one clock it reads); thread-compatible. The ILP is written out, with the
// choices the paper's lost equations forced, in docs/blitzscale.md.
//
// CONTRACT (lead, issue 10): used by src/sim/llm. Extend, do not change.
#ifndef SLUICE_CORE_LLM_ZIGZAG_H_
#define SLUICE_CORE_LLM_ZIGZAG_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
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
  // "ilp", "ilp-timeout", "best-effort", or (added) "local-search": the ILP's starting
  // incumbent, returned when GLPK has no better integer solution in time.
  std::string method;
  // Added by zigzag: when not proved optimal, (total finish - lower bound) / total finish, with
  // the ILP's root LP bound (a valid lower bound on SimulateZigzag's optimum, see
  // docs/blitzscale.md); 1 when no bound was obtained in time; 0 when optimal.
  double gap = 0;
};

// The ILP plan; falls back to (and reports) best effort when GLPK finds no integer solution in
// time. InvalidArgument naming the field for bad input (empty weight, non-positive times).
absl::StatusOr<ZigzagPlan> PlanZigzag(const ZigzagInput& input);
// Best effort: each batch in FIFO order takes min(layers loaded when it starts, cap) on the target.
absl::StatusOr<ZigzagPlan> PlanBestEffort(const ZigzagInput& input);
// Finish times of a given assignment under FIFO execution on the two instances (both plans and
// the simulator use this one schedule), respecting C2 and C3.
// The schedule (added by zigzag): the target runs one layer of one batch at a time, never
// preempting a layer; whenever it is free it runs the next layer of the earliest (FIFO) batch
// whose next layer is loaded, and idles until the next load when none is. That is the paper's
// priority queue with a pending queue rescanned on every layer load, and it is what makes the
// target come back for layer 2 of batches whose layer 1 it ran earlier (the zigzag). The source
// runs batch i's layers x_i+1..L after batch i-1 (FIFO) and after the target finished batch i's
// x_i layers (C2). Layer k is on the target at max(0, k - layers_loaded) x layer_load_time (C3).
// Preconditions (checked): ValidateZigzagInput(input).ok(), x.size() == weight.size(),
// 0 <= x_i <= num_layers.
std::vector<double> SimulateZigzag(const ZigzagInput& input, const std::vector<int>& x);

// Added by zigzag: the whole schedule behind SimulateZigzag, for tests and traces.
struct ZigzagTask {
  int batch = 0;  // 0-based
  int layer = 0;  // 1-based
  double start = 0, end = 0;
};
struct ZigzagSchedule {
  std::vector<ZigzagTask> target;     // in execution order
  std::vector<double> target_finish;  // per batch: end of its x_i target layers (0 when x_i = 0)
  std::vector<double> source_start;   // per batch
  std::vector<double> finish;         // per batch: source_start + (L - x_i) x weight_i
};
ZigzagSchedule SimulateZigzagSchedule(const ZigzagInput& input, const std::vector<int>& x);
// InvalidArgument naming the field (ZigzagInput.weight[3], ...).
[[nodiscard]] absl::Status ValidateZigzagInput(const ZigzagInput& input);
// When layer `layer` (1-based) is on the target: max(0, layer - layers_loaded) x layer_load_time.
double LayerReadyTime(const ZigzagInput& input, int layer);
// The cap on x_i: max_target_layers, or num_layers / 2 when it is -1.
int TargetLayerCap(const ZigzagInput& input);

}  // namespace sluice::core::llm

#endif  // SLUICE_CORE_LLM_ZIGZAG_H_
