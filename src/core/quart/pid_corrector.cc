// PID replica corrector (see pid_corrector.h).
#include "core/quart/pid_corrector.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace sluice::core {
namespace {

absl::Status NonNegative(double v, const char* field) {
  if (std::isfinite(v) && v >= 0)
    return absl::OkStatus();
  return absl::InvalidArgumentError(std::string("field '") + field + "': must be finite and >= 0");
}

absl::Status Positive(double v, const char* field) {
  if (std::isfinite(v) && v > 0)
    return absl::OkStatus();
  return absl::InvalidArgumentError(std::string("field '") + field + "': must be finite and > 0");
}

}  // namespace

absl::StatusOr<PidCorrector> PidCorrector::Create(const PidConfig& c) {
  for (auto [v, f] :
       {std::pair{c.kp, "kp"}, {c.ki, "ki"}, {c.kd, "kd"}, {c.integral_limit, "integral_limit"}}) {
    if (absl::Status s = NonNegative(v, f); !s.ok())
      return s;
  }
  for (auto [v, f] : {std::pair{c.error_limit, "error_limit"}, {c.max_step, "max_step"}}) {
    if (absl::Status s = Positive(v, f); !s.ok())
      return s;
  }
  return PidCorrector(c);
}

double PidCorrector::Update(double error, absl::Duration dt, bool hold_integral) {
  const PidConfig& c = config_;
  double e = std::isfinite(error) ? error : c.error_limit;
  e = std::clamp(e, -1.0, c.error_limit);
  const bool timed = dt > absl::ZeroDuration() && dt != absl::InfiniteDuration();
  const double dt_s = timed ? absl::ToDoubleSeconds(dt) : 0.0;
  const double derivative = timed && has_previous_ ? (e - previous_error_) / dt_s : 0.0;
  double candidate = integral_;
  if (timed && !hold_integral) {
    const double floor = c.two_sided_integral ? -c.integral_limit : 0.0;
    candidate = std::clamp(integral_ + e * dt_s, floor, c.integral_limit);
  }
  double out = c.kp * e + c.ki * candidate + c.kd * derivative;
  // Conditional integration: keep the new integral only if the output is not pushed further
  // into saturation by it (the classic clamping anti-windup).
  const bool saturated = std::abs(out) > c.max_step;
  const bool same_direction = (out > 0) == (e > 0);
  if (!(saturated && same_direction))
    integral_ = candidate;
  out = c.kp * e + c.ki * integral_ + c.kd * derivative;
  previous_error_ = e;
  has_previous_ = true;
  return std::clamp(out, -c.max_step, c.max_step);
}

void PidCorrector::Reset() {
  integral_ = 0;
  previous_error_ = 0;
  has_previous_ = false;
}

}  // namespace sluice::core
