// QuartFunctionScaler (see quart_function_scaler.h).
#include "core/quart/quart_function_scaler.h"

#include <algorithm>
#include <cmath>

#include "core/quart/mmc_model.h"

namespace sluice::core {
namespace {

bool Finite(absl::Duration d) {
  return d != absl::InfiniteDuration();
}

}  // namespace

absl::StatusOr<std::unique_ptr<QuartFunctionScaler>> QuartFunctionScaler::Create(
    const QuartFunctionScalerConfig& c) {
  if (c.min_instances < 0 || c.max_instances < c.min_instances)
    return absl::InvalidArgumentError("field 'max_instances': need 0 <= min <= max");
  if (!(c.capacity_rps >= 0) || !std::isfinite(c.capacity_rps))
    return absl::InvalidArgumentError("field 'capacity_rps': must be finite and >= 0");
  if (!(c.service_cv >= 0) || !std::isfinite(c.service_cv))
    return absl::InvalidArgumentError("field 'service_cv': must be finite and >= 0");
  if (c.latency_target <= absl::ZeroDuration() || !Finite(c.latency_target))
    return absl::InvalidArgumentError("field 'latency_target': must be finite and > 0");
  if (c.hold < absl::ZeroDuration() || !Finite(c.hold))
    return absl::InvalidArgumentError("field 'hold': must be finite and >= 0");
  if (c.queue_drain <= absl::ZeroDuration() || !Finite(c.queue_drain))
    return absl::InvalidArgumentError("field 'queue_drain': must be finite and > 0");
  return std::unique_ptr<QuartFunctionScaler>(new QuartFunctionScaler(c));
}

void QuartFunctionScaler::Observe(const LoadSample& s) {
  const double cap =
      s.capacity_rps_per_instance > 0 ? s.capacity_rps_per_instance : config_.capacity_rps;
  const double rps = std::isfinite(s.rps) ? std::max(0.0, s.rps) : 0.0;
  const double load = rps + std::max(0, s.queued) / absl::ToDoubleSeconds(config_.queue_drain);
  int need = 0;
  if (load > 0 && cap > 0) {
    need = ReplicasForTarget(load, cap, config_.latency_target, std::max(1, config_.max_instances),
                             1.0, config_.service_cv);
  } else if (load > 0) {
    need = std::min(std::max(1, s.instances), std::max(1, config_.max_instances));
  }
  last_needed_ = need;
  if (static_cast<int>(last_needed_at_.size()) < need)
    last_needed_at_.resize(need, s.at);
  std::fill(last_needed_at_.begin(), last_needed_at_.begin() + need, s.at);
}

int QuartFunctionScaler::Desired(absl::Time now) const {
  // Levels expire from the top (their times are non-increasing); a level needed at `now` lives.
  while (!last_needed_at_.empty() && last_needed_at_.back() != now &&
         now >= last_needed_at_.back() + config_.hold)
    last_needed_at_.pop_back();
  return std::clamp(static_cast<int>(last_needed_at_.size()), config_.min_instances,
                    config_.max_instances);
}

absl::Time QuartFunctionScaler::NextWakeup() const {
  if (static_cast<int>(last_needed_at_.size()) <= config_.min_instances)
    return absl::InfiniteFuture();
  return last_needed_at_.back() + std::max(config_.hold, absl::Nanoseconds(1));
}

}  // namespace sluice::core
