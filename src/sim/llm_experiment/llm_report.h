// Reports of `kind: llm_serving` runs (sim::llm::LlmRunResult): the human table, the JSON summary
// (`sluice sim run --json`; keys in docs/experiments.md, "llm_serving") and the `--out DIR`
// files: summary.json, summary.csv (one row per run x function) and <policy>_timeline.csv (§6.3's
// throughput timeline, Fig. 16's host-cache usage). Used by src/sim/cli/llm_command.cc and the
// reproduction script's consumers. JSON numbers are written by nlohmann-json, so equal results
// give byte-identical text apart from wall_s and events_per_s. Stateless; thread-safe.
#ifndef SLUICE_SIM_LLM_EXPERIMENT_LLM_REPORT_H_
#define SLUICE_SIM_LLM_EXPERIMENT_LLM_REPORT_H_

#include <span>
#include <string>

#include "absl/status/status.h"

#include "nlohmann/json.hpp"
#include "sim/llm/llm_sim.h"

namespace sluice::sim::llm {

// {"experiment", "kind": "llm_serving", "cluster": {...}, "runs": [RunJson...]}.
nlohmann::ordered_json LlmSummaryJson(const LlmSimConfig& config,
                                      std::span<const LlmRunResult> runs);
// One run: policy, gpu_seconds, mean_gpus, peak_gpus, host_cache_gib_mean/peak, events,
// events_per_s (events / wall_s; null when wall_s is 0), wall_s, functions[] (name, model, the
// SLOs, requests, completed, rejected, ttft_p50/p99/mean_ms, tbt_p50/p99/mean_ms, slo_attainment,
// scale_outs, scale_ins, mutations, live_scales, preemptions, mean_load_s).
nlohmann::ordered_json LlmRunJson(const LlmSimConfig& config, const LlmRunResult& run);
std::string LlmSummaryJsonText(const LlmSimConfig& config, std::span<const LlmRunResult> runs);

// A fixed-width table: one row per run x function, then one line per run with its GPU and host
// cache figures.
std::string LlmSummaryTable(const LlmSimConfig& config, std::span<const LlmRunResult> runs);

// CSV with a header row: t_s, prefill_tokens_per_s, decode_tokens_per_s, prefill_instances,
// decode_instances, loading_instances, gpus_busy, host_cache_gib, network_gbps.
std::string LlmTimelineCsv(const LlmRunResult& run);
// policy,function,requests,...: the JSON's per-function figures with the run's GPU figures.
std::string LlmSummaryCsv(std::span<const LlmRunResult> runs);
// "<policy>_timeline.csv".
std::string LlmTimelineFileName(const LlmRunResult& run);

// Creates `dir` if needed and writes summary.json, summary.csv and every run's timeline.
[[nodiscard]] absl::Status WriteLlmOutputDir(const std::string& dir, const LlmSimConfig& config,
                                             std::span<const LlmRunResult> runs);

}  // namespace sluice::sim::llm

#endif  // SLUICE_SIM_LLM_EXPERIMENT_LLM_REPORT_H_
