// KalmanRpsPredictor: HAS-GPU's short-term request-rate estimator (§3.3): a scalar Kalman filter
// over the measured RPS of one function. The hybrid autoscaler (hybrid_autoscaler.h) feeds it one
// measurement per sampling interval and scales on its estimate. Pure value type; not thread-safe.
#ifndef SLUICE_CORE_HASGPU_KALMAN_RPS_PREDICTOR_H_
#define SLUICE_CORE_HASGPU_KALMAN_RPS_PREDICTOR_H_

#include "absl/status/statusor.h"

namespace sluice::core {

// The paper's model: R_t = A R_{t-1} + w (process noise variance Q), measured z_t = H R_t + v
// (measurement noise variance D). The paper leaves every value open; ours, and why:
//   a = 1, h = 1: a random walk observed directly. Serverless load has no known drift or gain;
//     anything else biases the estimate for functions whose level it does not fit.
//   process_noise Q = 1, measurement_noise D = 0.25 (requests/s squared): only the ratio Q/D
//     matters for the steady-state gain; Q/D = 4 gives K = 0.83, so a burst is tracked within one
//     or two samples (an under-estimate costs SLO violations before the next sample can correct
//     it) while a single-sample spike is still damped by ~17 %. Scale-down is protected by the
//     autoscaler's beta and cool-down, not by the filter. The sensitivity study is in
//     kalman_rps_predictor_test.cc (KalmanSensitivity) and the README.
//   initial_covariance P0 = D: the first measurement initialises the state (R = z_1).
// The paper prints the prior covariance as A R_{t-1} A^T + Q; that is a typo for A P_{t-1} A^T + Q
// (a covariance cannot be propagated from the state), which is what Update() does.
struct KalmanConfig {
  double a = 1.0;
  double h = 1.0;
  double process_noise = 1.0;       // Q >= 0
  double measurement_noise = 0.25;  // D > 0
  double initial_covariance = 0.25;
};

class KalmanRpsPredictor {
 public:
  // InvalidArgument naming the field unless a > 0, h > 0, Q >= 0, D > 0, P0 >= 0 (all finite).
  static absl::StatusOr<KalmanRpsPredictor> Create(const KalmanConfig& config);

  // One measurement (requests/s; negative or non-finite values count as 0). The first one sets
  // the state. Returns the new estimate (>= 0), the paper's R, used as the next interval's RPS.
  double Update(double measured_rps);
  // The current estimate R (0 before any measurement).
  double estimate() const { return estimate_; }
  // Prediction for the next interval, A x R (>= 0).
  double Predict() const;
  // Posterior covariance P; stays > 0 whenever D > 0 (property-tested).
  double covariance() const { return covariance_; }
  // Kalman gain of the latest update (0 before the second measurement).
  double gain() const { return gain_; }
  bool initialised() const { return initialised_; }
  const KalmanConfig& config() const { return config_; }

 private:
  explicit KalmanRpsPredictor(const KalmanConfig& c) : config_(c), covariance_(c.initial_covariance) {}

  KalmanConfig config_;
  bool initialised_ = false;
  double estimate_ = 0;
  double covariance_;
  double gain_ = 0;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_HASGPU_KALMAN_RPS_PREDICTOR_H_
