// Scalar Kalman filter. The state is clamped at 0 after each update: a negative request rate is
// meaningless and would make the autoscaler's thresholds negative.
#include "core/hasgpu/kalman_rps_predictor.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace sluice::core {
namespace {

absl::Status Need(bool ok, const char* field, const char* rule, double v) {
  if (ok)
    return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("kalman ", field, " must be ", rule, " (", v, ")"));
}

}  // namespace

absl::StatusOr<KalmanRpsPredictor> KalmanRpsPredictor::Create(const KalmanConfig& c) {
  auto finite = [](double v) { return std::isfinite(v); };
  absl::Status s = Need(finite(c.a) && c.a > 0, "a", "finite and > 0", c.a);
  if (s.ok())
    s = Need(finite(c.h) && c.h > 0, "h", "finite and > 0", c.h);
  if (s.ok())
    s = Need(finite(c.process_noise) && c.process_noise >= 0, "process_noise", ">= 0",
             c.process_noise);
  if (s.ok())
    s = Need(finite(c.measurement_noise) && c.measurement_noise > 0, "measurement_noise", "> 0",
             c.measurement_noise);
  if (s.ok())
    s = Need(finite(c.initial_covariance) && c.initial_covariance >= 0, "initial_covariance",
             ">= 0", c.initial_covariance);
  if (!s.ok())
    return s;
  return KalmanRpsPredictor(c);
}

double KalmanRpsPredictor::Update(double z) {
  if (!std::isfinite(z) || z < 0)
    z = 0;
  const KalmanConfig& c = config_;
  if (!initialised_) {
    initialised_ = true;
    estimate_ = z / c.h;
    covariance_ = c.initial_covariance;
    return estimate_;
  }
  const double prior = c.a * estimate_;
  const double prior_cov = c.a * covariance_ * c.a + c.process_noise;
  gain_ = prior_cov * c.h / (c.h * prior_cov * c.h + c.measurement_noise);
  estimate_ = std::max(0.0, prior + gain_ * (z - c.h * prior));
  covariance_ = (1 - gain_ * c.h) * prior_cov;
  return estimate_;
}

double KalmanRpsPredictor::Predict() const {
  return std::max(0.0, config_.a * estimate_);
}

}  // namespace sluice::core
