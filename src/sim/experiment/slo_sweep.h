// The experiment file's `slo_sweep: {from, to, step}` (HAS-GPU Fig. 6: SVR at SLO = m x the
// model's shortest latency, m from 1 to 10 in steps of 0.25). Used by the experiment loader; the
// engine's FunctionMetrics computes the SVRs and the report writes them. Stateless.
#ifndef SLUICE_SIM_EXPERIMENT_SLO_SWEEP_H_
#define SLUICE_SIM_EXPERIMENT_SLO_SWEEP_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/perf/perf_model.h"
#include "sim/engine/sim_config.h"
#include "sim/experiment/yaml_fields.h"

namespace sluice::sim::internal {

// The multipliers from, from + step, ..., up to `to` (inclusive within 1e-9). Errors name the
// field: from must be > 0, to >= from, step > 0, and at most 1000 multipliers.
absl::StatusOr<std::vector<double>> ParseSloSweep(const StrictMap& top);

// When `top` has `slo_sweep:`, gives every inference function without an exponential service
// override the multipliers and its base: the shortest latency of its model, BatchLatency(1, 1, 1)
// (one request on the whole GPU at full time quota: the paper's "pure container" time). LLM and
// training functions get none. `config.functions` must already be parsed.
[[nodiscard]] absl::Status ApplySloSweep(const StrictMap& top, const core::PerfModel& perf,
                                         SimConfig& config);

}  // namespace sluice::sim::internal

#endif  // SLUICE_SIM_EXPERIMENT_SLO_SWEEP_H_
