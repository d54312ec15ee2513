// QUART's replica corrector (§5.1, Eq. 2-3, Algorithm 1 "Correct"): a PID controller per stage
// turning the stage's latency error into a replica increment. Owned one per stage by
// QuartScaler. Pure value type; not thread-safe.
#ifndef SLUICE_CORE_QUART_PID_CORRECTOR_H_
#define SLUICE_CORE_QUART_PID_CORRECTOR_H_

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace sluice::core {

// Gains and limits. The error is dimensionless, e = (T_i - T_target) / T_target (positive when
// the stage is slower than its target), so a gain reads "replicas per 100 % excess latency":
// kp 2.0 adds two replicas when a stage runs at twice its target. Defaults are QUART's code
// (kp 2.0, ki 0.3, kd 0.1); docs/quart.md has the sensitivity table that justifies keeping them
// under this normalisation. The paper sets e = T_target - T_i, the same controller with the sign
// folded into the gains; ours keeps positive gains and positive "scale up" output.
//   error_limit 4: an unstable stage's error is clipped at 4 (500 % of target) so one overload
//     cannot command more than kp x 4 = 8 replicas through the proportional term.
//   integral_limit 10 (error x seconds): anti-windup clamp; with ki 0.3 the integral term adds
//     at most 3 replicas.
//   max_step 8 replicas: the output bound per decision.
struct PidConfig {
  double kp = 2.0;
  double ki = 0.3;
  double kd = 0.1;
  double error_limit = 4.0;      // > 0
  double integral_limit = 10.0;  // >= 0, in error-seconds
  // false: the integral is clamped to [0, integral_limit]. QUART's corrector only scales up
  // (§5.1; the smoother reclaims), so time spent under target must not bank a negative
  // integral that would delay the next scale-up (with ki 0.3, 10 s under target would cancel
  // 3 replicas of the next correction). true: the textbook symmetric clamp.
  bool two_sided_integral = false;
  double max_step = 8.0;  // > 0, replicas
};

class PidCorrector {
 public:
  // InvalidArgument naming the field unless the gains are finite and >= 0 and the limits are
  // finite and positive (integral_limit may be 0: no integral action).
  static absl::StatusOr<PidCorrector> Create(const PidConfig& config);

  // One control step: `error` as above (non-finite counts as +error_limit, then clipped to
  // [-1, error_limit]: a stage cannot be more than 100 % faster than its target), `dt` the time
  // since the previous step (<= 0 or infinite skips the integral and derivative terms, as on the
  // first step). Returns kp e + ki I + kd de/dt clamped to [-max_step, max_step] (replicas,
  // fractional; the caller rounds). Anti-windup: the integral is clamped to [0, integral_limit]
  // ([-integral_limit, integral_limit] when two_sided_integral) and not accumulated in a step
  // whose output saturates in the error's direction, nor while
  // `hold_integral` is true (QuartScaler sets it while replicas it asked for are still starting,
  // so waiting for a cold start is not integrated into more replicas).
  double Update(double error, absl::Duration dt, bool hold_integral = false);

  // Forgets the integral and the previous error (after a stage is idle or reconfigured).
  void Reset();

  double integral() const { return integral_; }
  const PidConfig& config() const { return config_; }

 private:
  explicit PidCorrector(const PidConfig& c) : config_(c) {}

  PidConfig config_;
  double integral_ = 0;
  double previous_error_ = 0;
  bool has_previous_ = false;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_QUART_PID_CORRECTOR_H_
