// LazyScaler: a time-bounded window of RPS samples, recounted against the current instance count
// at every sample (40 samples: cheaper than keeping counts valid across changes of n).
#include "core/dilu/lazy_scaler.h"

#include <algorithm>

namespace sluice::core {

absl::StatusOr<std::unique_ptr<LazyScaler>> LazyScaler::Create(const LazyScalerConfig& c) {
  if (!(c.window > absl::ZeroDuration()) || c.phi_out < 1 || c.phi_in < 0 || c.min_instances < 0 ||
      c.max_instances < c.min_instances || !(c.capacity_rps >= 0)) {
    return absl::InvalidArgumentError("invalid lazy scaler config (see lazy_scaler.h)");
  }
  return std::unique_ptr<LazyScaler>(new LazyScaler(c));
}

int LazyScaler::Clamp(int n) const {
  return std::clamp(n, config_.min_instances, config_.max_instances);
}

void LazyScaler::Observe(const LoadSample& sample) {
  while (!window_.empty() && window_.front().at <= sample.at - config_.window) {
    window_.pop_front();
  }
  window_.push_back({sample.at, sample.rps});
  const int n = std::max(0, sample.instances);
  const double cap = sample.capacity_rps_per_instance > 0 ? sample.capacity_rps_per_instance
                                                          : config_.capacity_rps;
  high_ = 0;
  low_ = 0;
  if (n == 0) {
    desired_ = Clamp(sample.rps > 0 || sample.queued > 0 ? 1 : 0);
    return;
  }
  if (!(cap > 0)) {
    desired_ = Clamp(n);
    return;
  }
  const double serving = n * cap;
  const double one_less = (n - 1) * cap;
  for (const Point& p : window_) {
    if (p.rps > serving)
      ++high_;
    if (p.rps < one_less || (n == 1 && p.rps <= 0))
      ++low_;
  }
  int target = n;
  if (high_ >= config_.phi_out) {
    target = n + 1;
  } else if (low_ > config_.phi_in) {
    target = n - 1;
  }
  desired_ = Clamp(target);
  if (config_.reset_window_on_scale && target != n)
    window_.clear();
}

}  // namespace sluice::core
