// TableLatencyModel: a LatencyModel that interpolates a measured profile grid (batch x SM share x
// time quota), e.g. one Dilu bs_sm table or one RaPP model. Built by the simulator from parsed
// tables (profile_parsers.h) and registered with PerfModel::Add. Thread-compatible: immutable.
#ifndef SLUICE_CORE_PERF_TABLE_LATENCY_MODEL_H_
#define SLUICE_CORE_PERF_TABLE_LATENCY_MODEL_H_

#include <memory>
#include <span>
#include <vector>

#include "absl/status/statusor.h"

#include "core/perf/perf_model.h"
#include "core/perf/profile_parsers.h"

namespace sluice::core {

struct TableOptions {
  int training_batch = 32;  // IterationTime(s) = training_factor * t(training_batch, s, 1)
  double training_factor = 3.0;
  // LLMs: PrefillLatency(P, s) = t(1, s, 1) + P * prefill_per_token_s / s; 0 = no prefill phase.
  double prefill_per_token_s = 0;
};

// Construction:
//   - The grid axes are the distinct batches, shares and quotas of the points. Duplicate points
//     are averaged. A missing cell takes the value of the nearest present cell along the quota
//     axis, else the share axis, else the batch axis (the RaPP grid is not complete).
//   - Monotonicity is enforced (profiles are noisy, e.g. Dilu bert-base bs=1): first an isotonic
//     least-squares fit (pool adjacent violators) along share and along quota, then cumulative
//     maxima so the grid is non-decreasing in batch and non-increasing in share and quota.
//     A grid that is already monotone is left unchanged.
// Evaluation: trilinear in (log batch, share, quota) between grid points, exact at grid points;
// monotone like the grid up to floating-point rounding (about 1e-15 relative in flat regions).
// Outside the grid: quota and share above the largest are clamped; batch below the smallest is
// clamped; batch above the largest scales as t(b_max) * b / b_max (throughput stays at its
// saturated value); share below the smallest scales as t(s_min) * s_min / s (compute bound).
class TableLatencyModel : public LatencyModel {
 public:
  // InvalidArgument (naming the point's line) when `points` is empty or a point has batch < 1,
  // share or quota outside (0, 1], or a non-positive latency.
  static absl::StatusOr<std::unique_ptr<TableLatencyModel>> Create(
      std::span<const ProfilePoint> points, const TableOptions& options = {});

  absl::Duration BatchLatency(int batch, double sm_share, double time_quota = 1.0) const override;
  absl::Duration IterationTime(double sm_share) const override;
  absl::Duration PrefillLatency(int prompt_tokens, double sm_share) const override;

  double LatencySeconds(int batch, double sm_share, double time_quota = 1.0) const;
  const std::vector<int>& batches() const { return batches_; }
  const std::vector<double>& shares() const { return shares_; }
  const std::vector<double>& quotas() const { return quotas_; }
  // Cells the monotonicity pass changed, and cells filled because no point covered them.
  int adjusted_cells() const { return adjusted_cells_; }
  int filled_cells() const { return filled_cells_; }

 private:
  TableLatencyModel() = default;
  size_t Index(size_t b, size_t s, size_t q) const {
    return (b * shares_.size() + s) * quotas_.size() + q;
  }
  double& Cell(size_t b, size_t s, size_t q) { return grid_[Index(b, s, q)]; }
  void Fill(const std::vector<bool>& present);
  void EnforceMonotone();
  double Interpolate(double log_batch, double share, double quota) const;

  std::vector<int> batches_;
  std::vector<double> log_batches_;
  std::vector<double> shares_;
  std::vector<double> quotas_;
  std::vector<double> grid_;  // seconds, Index(b, s, q)
  TableOptions options_;
  int adjusted_cells_ = 0;
  int filled_cells_ = 0;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_PERF_TABLE_LATENCY_MODEL_H_
