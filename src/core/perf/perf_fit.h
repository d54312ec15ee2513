// Fitting the analytic performance model to profile tables: the spatial parameters per model
// (Dilu / gpulet tables), the global time-quota parameters (RaPP table) and the interference
// coefficient kappa (gpulet interference.csv), plus the error measures reported in
// docs/perf-model.md. Used by sluice_sim_perf_fit (which reads the files) and by tests.
// Pure computation; thread-safe (no shared state).
#ifndef SLUICE_CORE_PERF_PERF_FIT_H_
#define SLUICE_CORE_PERF_PERF_FIT_H_

#include <optional>
#include <span>

#include "absl/status/statusor.h"

#include "core/perf/analytic_latency_model.h"
#include "core/perf/profile_parsers.h"

namespace sluice::core {

// Absolute percentage error |predicted - measured| / measured, in percent.
struct FitError {
  double mape = 0;     // mean (a running sum until Finish())
  double max_ape = 0;  // worst point
  int points = 0;
  // Adds one point (measured > 0); call Finish() once after the last.
  void Add(double predicted, double measured);
  void Finish();
};

// Error of `model` against every point (each at its batch, share and quota).
FitError MeasureFit(const LatencyModel& model, std::span<const ProfilePoint> points);

// Fits SpatialParams (analytic_latency_model.h) to the points with time_quota == 1, minimising
// the sum of squared log errors with Nelder-Mead from several starting points. Deterministic.
// InvalidArgument when fewer than 8 such points.
absl::StatusOr<SpatialParams> FitSpatial(std::span<const ProfilePoint> points);

// Fits the global QuotaParams to a time-sliced table with many models (RaPP). For each
// (model, share, batch) the quota = 1 row is the unsliced latency t(b, s) and the model's
// (share 1, batch 1, quota 1) row is its t_ref; rows lacking either are skipped. Least squares in
// log latency over the rows with quota < 1. InvalidArgument when fewer than 8 usable rows.
struct QuotaFit {
  QuotaParams params;
  FitError error;  // over the usable quota < 1 rows, with measured t(b, s) as the base
};
// With `fixed_delta` set, delta is held at that value (1 for a single model: its window then
// scales with its own latency when moved to another GPU) and omega, eta and r are fitted.
absl::StatusOr<QuotaFit> FitQuota(std::span<const ProfilePoint> points,
                                  std::optional<double> fixed_delta = std::nullopt);
// The error of given QuotaParams on such a table (same row selection as FitQuota).
FitError MeasureQuotaFit(const QuotaParams& params, std::span<const ProfilePoint> points);

// kappa of PerfModel::InterferenceSlowdown: for each co-located row of A whose solo latency at the
// same (model, batch, share) is in `solo`, slowdown = co / solo and the co-runner share is
// 1 - share_a (B holds the rest of the GPU). kappa is the least-squares slope of (slowdown - 1)
// on the co-runner share. NotFound when no row matches.
struct KappaFit {
  double kappa = 0;
  FitError error;            // of solo * (1 + kappa * co_share) against the co-located latency
  double mean_slowdown = 0;  // measured
  int unmatched = 0;         // co-located rows without a solo row
};
absl::StatusOr<KappaFit> FitInterferenceKappa(std::span<const ProfilePoint> solo,
                                              std::span<const InterferencePoint> co);

// Prefill cost per prompt token (seconds, whole model) from Vidur layer times: the least-squares
// slope of layers * layer_time_s over num_tokens, using rows with tensor_parallel == 1 and
// num_tokens >= min_tokens (where the GEMMs are compute bound). InvalidArgument with < 2 rows.
absl::StatusOr<double> FitPrefillPerToken(std::span<const VidurLayerTime> rows, int layers,
                                          int min_tokens = 512);

}  // namespace sluice::core

#endif  // SLUICE_CORE_PERF_PERF_FIT_H_
