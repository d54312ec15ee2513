// ReactiveScaler.
#include "core/baselines/reactive_scaler.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace sluice::core {

absl::StatusOr<std::unique_ptr<ReactiveScaler>> ReactiveScaler::Create(
    const ReactiveScalerConfig& config) {
  if (config.min_instances < 0 || config.max_instances < config.min_instances) {
    return absl::InvalidArgumentError(
        absl::StrCat("reactive scaler: need 0 <= min <= max (min=", config.min_instances,
                     ", max=", config.max_instances, ")"));
  }
  if (config.keep_alive < absl::ZeroDuration() || config.keep_alive == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError("reactive scaler: keep_alive must be finite and >= 0");
  }
  if (config.queue_drain <= absl::ZeroDuration() ||
      config.queue_drain == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError("reactive scaler: queue_drain must be finite and > 0");
  }
  ReactiveScalerConfig effective = config;
  // A level needed at time t must be live at t itself, so expiry is at least 1 ns later.
  effective.keep_alive = std::max(config.keep_alive, absl::Nanoseconds(1));
  return std::unique_ptr<ReactiveScaler>(new ReactiveScaler(effective));
}

int InstancesNeeded(const LoadSample& s, double fallback_capacity_rps, absl::Duration queue_drain,
                    int max_instances) {
  const double rps = std::max(0.0, s.rps);
  const double demand = rps + std::max(0, s.queued) / absl::ToDoubleSeconds(queue_drain);
  const double capacity =
      s.capacity_rps_per_instance > 0 ? s.capacity_rps_per_instance : fallback_capacity_rps;
  if (!(capacity > 0)) {
    return demand > 0 ? std::min(std::max(1, s.instances), max_instances) : 0;
  }
  // 1e-9 keeps an exact multiple (e.g. 100 rps at 50 rps/instance) from asking for one more.
  const double n = std::ceil(demand / capacity - 1e-9);
  return static_cast<int>(std::clamp(n, 0.0, static_cast<double>(max_instances)));
}

void ReactiveScaler::Observe(const LoadSample& sample) {
  last_needed_ =
      InstancesNeeded(sample, config_.capacity_rps, config_.queue_drain, config_.max_instances);
  if (static_cast<int>(last_needed_at_.size()) < last_needed_) {
    last_needed_at_.resize(last_needed_);
  }
  std::fill(last_needed_at_.begin(), last_needed_at_.begin() + last_needed_, sample.at);
}

int ReactiveScaler::Desired(absl::Time now) const {
  while (!last_needed_at_.empty() && last_needed_at_.back() + config_.keep_alive <= now) {
    last_needed_at_.pop_back();
  }
  const int live = static_cast<int>(last_needed_at_.size());
  return std::clamp(live, config_.min_instances, config_.max_instances);
}

absl::Time ReactiveScaler::NextWakeup() const {
  if (static_cast<int>(last_needed_at_.size()) <= config_.min_instances) {
    return absl::InfiniteFuture();
  }
  return last_needed_at_.back() + config_.keep_alive;
}

}  // namespace sluice::core
