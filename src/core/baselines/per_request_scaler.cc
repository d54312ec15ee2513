// PerRequestScaler: the level bookkeeping of ReactiveScaler with capacity one request.
#include "core/baselines/per_request_scaler.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace sluice::core {

absl::StatusOr<std::unique_ptr<PerRequestScaler>> PerRequestScaler::Create(
    const PerRequestConfig& c) {
  if (c.keep_alive < absl::ZeroDuration() || c.keep_alive == absl::InfiniteDuration())
    return absl::InvalidArgumentError("per-request keep_alive must be finite and >= 0");
  if (c.min_instances < 0 || c.max_instances < c.min_instances) {
    return absl::InvalidArgumentError(
        absl::StrCat("per-request min_instances / max_instances: need 0 <= min <= max (min=",
                     c.min_instances, ", max=", c.max_instances, ")"));
  }
  if (c.request_latency < absl::ZeroDuration())
    return absl::InvalidArgumentError("per-request request_latency must be >= 0");
  PerRequestConfig effective = c;
  // A level busy at t must be alive at t itself, so expiry is at least 1 ns later.
  effective.keep_alive = std::max(c.keep_alive, absl::Nanoseconds(1));
  return std::unique_ptr<PerRequestScaler>(new PerRequestScaler(effective));
}

void PerRequestScaler::ObserveConcurrency(absl::Time now, int concurrency) {
  const int c = std::clamp(concurrency, 0, config_.max_instances);
  if (static_cast<int>(last_busy_.size()) < c)
    last_busy_.resize(c);
  std::fill(last_busy_.begin(), last_busy_.begin() + c, now);
}

void PerRequestScaler::Observe(const LoadSample& s) {
  const double rps = std::max(0.0, s.rps);
  // 1e-9: an exact product (2 rps x 0.5 s) is one instance, not two.
  int c = static_cast<int>(
      std::min(std::ceil(rps * absl::ToDoubleSeconds(config_.request_latency) - 1e-9),
               static_cast<double>(config_.max_instances)));
  if (rps > 0)
    c = std::max(c, 1);
  ObserveConcurrency(s.at, c + std::max(0, s.queued));
}

bool PerRequestScaler::IsColdStart(absl::Time now, int concurrency_before) const {
  return Desired(now) <= concurrency_before;
}

int PerRequestScaler::Desired(absl::Time now) const {
  while (!last_busy_.empty() && last_busy_.back() + config_.keep_alive <= now)
    last_busy_.pop_back();
  return std::clamp(static_cast<int>(last_busy_.size()), config_.min_instances,
                    config_.max_instances);
}

absl::Time PerRequestScaler::NextWakeup() const {
  if (static_cast<int>(last_busy_.size()) <= config_.min_instances)
    return absl::InfiniteFuture();
  return last_busy_.back() + config_.keep_alive;
}

}  // namespace sluice::core
