// Resource-aware latency predictor (HAS-GPU's RaPP role, docs/perf-model.md "Predictor"):
// latency of (model, batch b, SM partition s, time quota q) for a NEW model from six profiled
// configurations of it plus structure learned from many other models' profiles (RaPP's V100
// table). No operator graphs are needed. Used by src/sim/predictor (evaluation, the `rapp/<model>`
// perf models) and the `sluice sim predict` command. Pure computation, no I/O.
// Thread-compatible: a trained LatencyPredictor and a CalibratedPredictor are immutable.
//
// Model (docs/perf-model.md gives the evidence):
//   L(b, s, q) = smoothmax_r(T(b, s), F(q)),   smoothmax_r(x, y) = (x^r + y^r)^(1/r)
//   T(b, s) = smoothmax_p(A_b, K_b * s^-alpha)            latency without time slicing
//     A_b = A_1^(1-f) * A_8^f, f = log b / log 8          launch / fixed-cost floor
//     K_b = K_8 * (b / 8)^gamma                           compute-bound work
//   F(q)    the model's time-slicing floor: what one batch waits for its slices of the window,
//           nearly independent of b and s in the data. Its shape over q is the weighted mean of the
//           k training models whose measured L(1, 1, q) curves best match the new model's
//           profiled quota points (after a per-model shift in log latency), corrected to pass
//           through those points.
//   alpha, p, gamma are learned on the training models (grid search, least mean APE at q = 1);
//   A_1, A_8, K_8 come from the new model's three q = 1 profile points.
#ifndef SLUICE_CORE_PERF_QUOTA_PREDICTOR_H_
#define SLUICE_CORE_PERF_QUOTA_PREDICTOR_H_

#include <array>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "core/perf/perf_model.h"
#include "core/perf/profile_parsers.h"

namespace sluice::core {

// One configuration to profile.
struct ProfileConfig {
  int batch = 1;
  double sm_share = 1.0;
  double time_quota = 1.0;
};

// The six configurations a new model is profiled at (RaPP's own runtime profiler uses 11: six SM
// configurations at full quota and five quotas at full SM): three at full quota (b 1 and 8 on the
// whole GPU, b 8 on the smallest partition) and three more quotas at b 1 on the whole GPU.
inline constexpr std::array<ProfileConfig, 6> kProfilePlan = {{{1, 1.0, 1.0},
                                                               {8, 1.0, 1.0},
                                                               {8, 0.05, 1.0},
                                                               {1, 1.0, 0.1},
                                                               {1, 1.0, 0.3},
                                                               {1, 1.0, 0.6}}};

// The configurations the predictor was trained on (inclusive bounds). Predict() refuses anything
// outside; PredictorLatencyModel extrapolates instead (its contract cannot fail).
struct PredictorDomain {
  int min_batch = 1, max_batch = 8;
  double min_share = 0.05, max_share = 1.0;
  double min_quota = 0.1, max_quota = 1.0;
};

struct PredictorOptions {
  int neighbours = 6;     // k of the quota-curve neighbour search
  double combine_r = 8;   // smoothmax exponent between T(b, s) and F(q)
};

// The learned spatial shape (see the file comment).
struct SpatialShape {
  double alpha = 1.0;
  double p = 3.0;
  double gamma = 0.9;
};

class CalibratedPredictor;

class LatencyPredictor {
 public:
  // Trains on profiles of many models (points grouped by ProfilePoint::model). A model is used
  // when it has every kProfilePlan configuration and L(1, 1, q) at every quota of the grid (the
  // distinct quotas in the data). InvalidArgument when fewer than 2 models qualify, a point is
  // malformed (batch < 1, share/quota outside (0, 1], latency <= 0; names the line), or the data
  // lack a plan configuration's batch, share or quota.
  static absl::StatusOr<LatencyPredictor> Train(std::span<const ProfilePoint> points,
                                                const PredictorOptions& options = {});

  // Calibrates a new model from its profiled points (must include every kProfilePlan
  // configuration; extra points are ignored). InvalidArgument naming the missing configuration.
  // `exclude` names a training model to leave out of the neighbour search (evaluation in-sample).
  absl::StatusOr<CalibratedPredictor> Calibrate(std::span<const ProfilePoint> profile,
                                                const std::string& exclude = "") const;

  const PredictorDomain& domain() const { return domain_; }
  const SpatialShape& shape() const { return shape_; }
  const std::vector<double>& quota_grid() const { return quotas_; }
  int models() const { return static_cast<int>(curves_.size()); }

 private:
  struct Curve {
    std::string model;
    std::vector<double> log_latency;  // log L(1, 1, q) on quotas_ (seconds)
  };
  LatencyPredictor() = default;

  PredictorOptions options_;
  PredictorDomain domain_;
  SpatialShape shape_;
  std::vector<double> quotas_;  // ascending, ends at 1
  std::vector<Curve> curves_;
};

// One model's predictor. Cheap to evaluate (no allocation).
class CalibratedPredictor {
 public:
  // Latency in seconds; InvalidArgument naming `batch`, `sm` or `quota` and the allowed range
  // when the configuration is outside the training domain.
  absl::StatusOr<double> Predict(int batch, double sm_share, double time_quota) const;
  // Latency in seconds for any batch >= 1, share and quota in (0, 1] (clamped to [0.01, 1]):
  // beyond batch 8, T grows as b / 8; below the smallest quota, F grows as q_min / q; shares
  // follow the fitted power law. Monotone like a LatencyModel.
  double Seconds(int batch, double sm_share, double time_quota) const;
  // The spatial latency T(b, s) and the time-slicing floor F(q), in seconds.
  double Spatial(int batch, double sm_share) const;
  double Floor(double time_quota) const;
  const PredictorDomain& domain() const { return domain_; }

 private:
  friend class LatencyPredictor;
  CalibratedPredictor() = default;

  PredictorDomain domain_;
  SpatialShape shape_;
  double combine_r_ = 8;
  double a1_ = 0, a8_ = 0, k8_ = 0;  // seconds
  std::vector<double> quotas_;
  std::vector<double> log_floor_;  // log F(q) on quotas_, non-increasing
};

// A LatencyModel backed by a CalibratedPredictor (the simulator's `rapp/<model>` models).
// IterationTime: 3 x T(32, s) as TableLatencyModel; no prefill.
class PredictorLatencyModel : public LatencyModel {
 public:
  explicit PredictorLatencyModel(CalibratedPredictor predictor)
      : predictor_(std::move(predictor)) {}
  absl::Duration BatchLatency(int batch, double sm_share, double time_quota = 1.0) const override;
  absl::Duration IterationTime(double sm_share) const override;
  const CalibratedPredictor& predictor() const { return predictor_; }

 private:
  CalibratedPredictor predictor_;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_PERF_QUOTA_PREDICTOR_H_
