// The LLM part of sluice_sim_perf_fit: re-fits the token-linear and all-reduce constants of
// core/perf/llm_builtin_models.cc from vidur-profiling-subset, and prints the fresh fit and the
// shipped constants' error per model / GPU / tp. Skips (with one line saying so) when the Vidur
// subset is absent. Single-threaded; writes to stdout.
#ifndef SLUICE_SIM_PERF_FIT_LLM_FIT_H_
#define SLUICE_SIM_PERF_FIT_LLM_FIT_H_

#include <string>

#include "absl/status/status.h"

namespace sluice::sim {

// `data_dir` holds vidur-profiling-subset/ (and dilu-artifacts/ for a cross-check table). OK
// when the subset is absent (skipped); an error
// naming the file for a table that exists but does not parse or fit.
[[nodiscard]] absl::Status FitLlmTables(const std::string& data_dir);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_PERF_FIT_LLM_FIT_H_
