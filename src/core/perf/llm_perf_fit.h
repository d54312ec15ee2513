// Fitting the LLM model's data-calibrated constants (llm_analytic_model.h) to Vidur's profiles:
// the per-layer token-linear curve (compute/<sku>/<model>/mlp.csv) and the all-reduce line
// (network/<sku>_dgx/all_reduce.csv), with their errors for docs/perf-model.md. Used by
// sluice_sim_perf_fit (which reads the files) and by tests. Pure; thread-safe (no shared state).
#ifndef SLUICE_CORE_PERF_LLM_PERF_FIT_H_
#define SLUICE_CORE_PERF_LLM_PERF_FIT_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/perf/llm_analytic_model.h"
#include "core/perf/perf_fit.h"
#include "core/perf/profile_parsers.h"

namespace sluice::core {

// The rows of one tensor-parallel degree (VidurLayerTime::tensor_parallel == tp).
std::vector<VidurLayerTime> VidurRowsAtTp(std::span<const VidurLayerTime> rows, int tp);

// Error of the per-layer curve t(n) against rows (every row's layer_time_s at its num_tokens).
FitError MeasureLlmLinear(const LlmLinearParams& params, std::span<const VidurLayerTime> rows);

// Least squares in log time over `rows` (one tp) with Nelder-Mead from several starts;
// deterministic. InvalidArgument with fewer than 4 rows.
struct LlmLinearFit {
  LlmLinearParams params;
  FitError error;
};
absl::StatusOr<LlmLinearFit> FitLlmLinear(std::span<const VidurLayerTime> rows);

// One row of Vidur's all_reduce.csv: the median time of one all-reduce of size_bytes among
// num_workers GPUs, devices_per_node of them in one node.
struct VidurAllReduceTime {
  int64_t size_bytes = 0;
  int num_workers = 1;
  int devices_per_node = 1;
  double time_s = 0;
  int line = 0;
};
// all_reduce.csv: a header naming time_stats.all_reduce.median (milliseconds), num_workers, size,
// devices_per_node. Errors name file:line and the field.
absl::StatusOr<std::vector<VidurAllReduceTime>> ParseVidurAllReduce(absl::string_view contents,
                                                                    absl::string_view file);

// Relative least squares of latency_s + size / bytes_per_s over the intra-node rows with
// num_workers == devices_per_node == workers (closed form). InvalidArgument with < 2 such rows
// or a non-positive bandwidth.
struct AllReduceFit {
  AllReduceParams params;
  FitError error;
};
absl::StatusOr<AllReduceFit> FitAllReduce(std::span<const VidurAllReduceTime> rows, int workers);
FitError MeasureAllReduce(const AllReduceParams& params, std::span<const VidurAllReduceTime> rows,
                          int workers);

}  // namespace sluice::core

#endif  // SLUICE_CORE_PERF_LLM_PERF_FIT_H_
