// Output formats of `sluice sim run`: the JSON summary (a contract later tools rely on; keys in
// docs/experiments.md), the human table, and per-run CSV timelines for `--out DIR`. Pure
// formatting of RunResults, except WriteOutputDir. Stateless and thread-safe.
#ifndef SLUICE_SIM_EXPERIMENT_REPORT_H_
#define SLUICE_SIM_EXPERIMENT_REPORT_H_

#include <span>
#include <string>

#include "absl/status/status.h"
#include "nlohmann/json.hpp"
#include "sim/engine/sim_config.h"
#include "sim/experiment/function_profile.h"

namespace sluice::sim {

// {"experiment", "seed", "runs": [RunJson...]} with keys in contract order. `config` supplies
// the experiment name, the seed that was used, and each function's kind (training functions add
// training_iters_per_s and jct_s). `profiles` (LoadedExperiment::profiles) adds a "profile"
// object to each profiled function.
nlohmann::ordered_json SummaryJson(const SimConfig& config, std::span<const RunResult> runs,
                                   std::span<const ProfiledFunction> profiles = {});
// {"policy", "workload", "gpu_seconds", "held_gpu_seconds", "cost_usd",
//  "cost_per_1k_requests_usd", "peak_active_gpus", "mean_active_gpus", "sm_fragmentation",
//  "mem_fragmentation", "fgd_fragmentation", "events", "functions": [...]};
// each function {"name", "requests", "p50_ms", "p95_ms", "p99_ms", "mean_ms", "svr",
// "cold_starts", "throughput_rps", "completed", "dropped", "vertical_scalings",
// "rejected_actions", "held_gpu_seconds", "cost_usd", "cost_per_1k_requests_usd"} plus
// "theory_mean_ms" when the run
// computed it, and "profile": {"request", "limit", "batch", "trials"} when the function is in
// `profiles`. Non-finite numbers are written as null.
nlohmann::ordered_json RunJson(const SimConfig& config, const RunResult& run,
                               std::span<const ProfiledFunction> profiles = {});
// SummaryJson pretty-printed (2-space indent) with a trailing newline.
std::string SummaryJsonText(const SimConfig& config, std::span<const RunResult> runs,
                            std::span<const ProfiledFunction> profiles = {});

// The human-readable report: a header, one line per profiled function (its quota, batch,
// capacity and trial count), one block per run (cluster metrics, then a row per function), and a
// comparison of all runs.
std::string SummaryTable(const SimConfig& config, std::span<const RunResult> runs,
                         std::span<const ProfiledFunction> profiles = {});

// CSV timeline of one run: t_s, active_gpus, allocated_share, sm_fragmentation,
// mem_fragmentation, cost_usd (cumulative), then <function>_instances and <function>_rps per
// function in config order.
std::string TimelineCsv(const SimConfig& config, const RunResult& run);
// "<policy>_<workload>_timeline.csv".
std::string TimelineFileName(const RunResult& run);
// One row per run: policy, workload, requests, svr (requests-weighted, dropped count),
// cold_starts, mean/peak_active_gpus, gpu_seconds, held_gpu_seconds, cost_usd,
// cost_per_1k_requests_usd, idle_memory_gib_s, cold_start_wait_s, cold_start_ms_per_request,
// events (the run JSON's fields of the same names; src/sim/experiment/README.md).
std::string SummaryCsv(std::span<const RunResult> runs);

// Creates `dir` (and parents) and writes summary.json, summary.csv and one TimelineCsv per run.
// Errors name the path that could not be written.
[[nodiscard]] absl::Status WriteOutputDir(const std::string& dir, const SimConfig& config,
                                          std::span<const RunResult> runs,
                                          std::span<const ProfiledFunction> profiles = {});

// Creates `dir` and its parents when missing. Errors name the directory.
[[nodiscard]] absl::Status CreateOutputDir(const std::string& dir);

// Writes `text` to `path`, replacing it. Errors name the path.
[[nodiscard]] absl::Status WriteTextFile(const std::string& path, const std::string& text);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_EXPERIMENT_REPORT_H_
