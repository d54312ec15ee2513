// Report sections for pipeline functions (issue 11, QUART): per pipeline the end-to-end latency
// (mean / p50 / p75 / p99), SVR, goodput and SLO satisfaction at each multiplier of the
// standalone time (QUART Fig. 6), and per stage queue length, arrival CV, utilisation, replicas,
// CPU workers and key stage (Fig. 8b). Used by report.cc. Pure formatting; thread-safe.
#ifndef SLUICE_SIM_EXPERIMENT_PIPELINE_REPORT_H_
#define SLUICE_SIM_EXPERIMENT_PIPELINE_REPORT_H_

#include <span>
#include <string>

#include "nlohmann/json.hpp"
#include "sim/engine/sim_config.h"

namespace sluice::sim {

// [{"name", "requests", "completed", "dropped", "mean_ms", "p50_ms", "p75_ms", "p95_ms",
//   "p99_ms", "svr", "slo_ms", "goodput_rps", "held_gpu_seconds",
//   "slo_sweep": {"base_ms", "multipliers", "satisfaction", "goodput_rps"},
//   "stages": [{"function", "mean_queue_length", "arrival_cv", "utilisation", "mean_replicas",
//               "mean_cpu_workers", "mean_sojourn_ms", "mean_transfer_ms", "cold_starts",
//               "key_stage"}]}], one per run.pipelines entry. Non-finite numbers are null.
nlohmann::ordered_json PipelinesJson(const SimConfig& config, const RunResult& run);

// The run's pipeline rows and, per pipeline, its stage table; nothing when it has none.
void AppendPipelineTables(const SimConfig& config, const RunResult& run, std::string& out);

// One row per (run, pipeline): policy, workload, pipeline, mean / p99 latency, goodput and the
// SLO satisfaction at 1.5x the standalone time (QUART's headline point) when swept; nothing
// when no run has pipelines.
void AppendPipelineComparison(const SimConfig& config, std::span<const RunResult> runs,
                              std::string& out);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_EXPERIMENT_PIPELINE_REPORT_H_
