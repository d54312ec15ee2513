// LazyScaler: a time-bounded window of RPS samples whose high / low counts against the current
// instance count and capacity are kept as samples enter and leave (recounted when n changes).
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

void LazyScaler::Count(const Point& p, int sign) {
  if (counted_n_ == 0)
    return;
  // The same arithmetic as a full recount, so the counts never drift from it.
  const double serving = counted_n_ * counted_cap_;
  const double one_less = (counted_n_ - 1) * counted_cap_;
  if (p.rps > serving)
    counted_high_ += sign;
  if (p.rps < one_less || (counted_n_ == 1 && p.rps <= 0))
    counted_low_ += sign;
}

void LazyScaler::Recount(int n, double cap) {
  counted_n_ = n;
  counted_cap_ = cap;
  counted_high_ = 0;
  counted_low_ = 0;
  for (size_t i = 0; i < window_.size(); ++i)
    Count(window_[i], +1);
}

void LazyScaler::Observe(const LoadSample& sample) {
  while (!window_.empty() && window_.front().at <= sample.at - config_.window) {
    Count(window_.front(), -1);
    window_.pop_front();
  }
  window_.push_back({sample.at, sample.rps});
  Count(window_.back(), +1);
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
  if (n != counted_n_ || cap != counted_cap_)
    Recount(n, cap);
  high_ = counted_high_;
  low_ = counted_low_;
  int target = n;
  if (high_ >= config_.phi_out) {
    target = n + 1;
  } else if (low_ > config_.phi_in) {
    target = n - 1;
  }
  desired_ = Clamp(target);
  if (config_.reset_window_on_scale && target != n) {
    window_.clear();
    counted_high_ = 0;
    counted_low_ = 0;
  }
}

int LazyScaler::SamplesBeforeScaleOut(int instances) const {
  if (instances < 1 || counted_n_ != instances)
    return 0;
  return std::max(0, config_.phi_out - 1 - counted_high_);
}

int LazyScaler::SamplesBeforeScaleIn(int instances) const {
  if (instances < 1 || counted_n_ != instances)
    return 0;
  return std::max(0, config_.phi_in - counted_low_);
}

int LazyScaler::SamplesWithoutDecision(absl::Time /*now*/, absl::Duration /*interval*/,
                                       int instances) const {
  if (desired_ != instances)
    return 0;
  return std::min(SamplesBeforeScaleOut(instances), SamplesBeforeScaleIn(instances));
}

}  // namespace sluice::core
