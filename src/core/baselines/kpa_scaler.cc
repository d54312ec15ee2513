// KPA evaluation, following knative.dev/serving pkg/autoscaler/scaling/autoscaler.go (Scale):
// windows are averaged over the samples they hold (Knative's buckets are per second; so are the
// simulator's and the gateway's load samples).
#include "core/baselines/kpa_scaler.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace sluice::core {
namespace {

absl::Status Bad(const char* field, const char* rule) {
  return absl::InvalidArgumentError(absl::StrCat("kpa ", field, " must be ", rule));
}

}  // namespace

absl::StatusOr<std::unique_ptr<KpaScaler>> KpaScaler::Create(const KpaConfig& c) {
  if (!(c.target_concurrency > 0) || !std::isfinite(c.target_concurrency))
    return Bad("target_concurrency", "> 0");
  if (!(c.target_utilization > 0 && c.target_utilization <= 1))
    return Bad("target_utilization", "in (0, 1]");
  if (c.stable_window <= absl::ZeroDuration())
    return Bad("stable_window", "> 0");
  if (c.panic_window <= absl::ZeroDuration() || c.panic_window > c.stable_window)
    return Bad("panic_window", "in (0, stable_window]");
  if (!(c.panic_threshold > 0))
    return Bad("panic_threshold", "> 0");
  if (!(c.max_scale_up_rate >= 1) || !(c.max_scale_down_rate >= 1))
    return Bad("max_scale_up_rate / max_scale_down_rate", ">= 1");
  if (c.scale_to_zero_grace < absl::ZeroDuration())
    return Bad("scale_to_zero_grace", ">= 0");
  if (c.min_instances < 0 || c.max_instances < c.min_instances)
    return Bad("min_instances / max_instances", "0 <= min <= max");
  if (c.request_latency < absl::ZeroDuration())
    return Bad("request_latency", ">= 0");
  return std::unique_ptr<KpaScaler>(new KpaScaler(c));
}

double KpaScaler::WindowMean(absl::Time at, absl::Duration window) const {
  double sum = 0;
  int n = 0;
  for (auto it = samples_.rbegin(); it != samples_.rend() && it->first > at - window; ++it) {
    sum += it->second;
    ++n;
  }
  return n == 0 ? 0 : sum / n;
}

void KpaScaler::Observe(const LoadSample& s) {
  const double c = std::max(0.0, s.rps) * absl::ToDoubleSeconds(config_.request_latency) +
                   std::max(0, s.queued);
  samples_.emplace_back(s.at, c);
  while (!samples_.empty() && samples_.front().first <= s.at - config_.stable_window)
    samples_.pop_front();
  const double t = config_.target_concurrency * config_.target_utilization;
  const double ready = std::max(1, s.instances);
  const int want_stable = static_cast<int>(std::ceil(WindowMean(s.at, config_.stable_window) / t));
  const int want_panic = static_cast<int>(std::ceil(WindowMean(s.at, config_.panic_window) / t));
  // Knative compares the rounded-up panic pod count (dppc / readyPodsCount >= threshold).
  if (want_panic / ready >= config_.panic_threshold) {
    panic_since_ = s.at;  // begins, or (as Knative does) re-arms while still over
  } else if (in_panic() && s.at >= panic_since_ + config_.stable_window) {
    panic_since_ = absl::InfiniteFuture();
  }
  int want = in_panic() ? std::max({want_panic, want_stable, desired_}) : want_stable;
  const int up = static_cast<int>(std::ceil(config_.max_scale_up_rate * ready));
  const int down = static_cast<int>(std::floor(ready / config_.max_scale_down_rate));
  want = std::clamp(want, std::min(down, up), up);
  want = std::clamp(want, config_.min_instances, config_.max_instances);
  if (want == 0 && desired_ != 0)
    zero_since_ = s.at;
  if (want != 0)
    zero_since_ = absl::InfiniteFuture();
  desired_ = want;
}

int KpaScaler::Desired(absl::Time now) const {
  if (desired_ < 0)
    return config_.min_instances;
  if (desired_ == 0 && now < zero_since_ + config_.scale_to_zero_grace)
    return std::min(1, config_.max_instances);
  return desired_;
}

absl::Time KpaScaler::NextWakeup() const {
  if (desired_ == 0 && zero_since_ != absl::InfiniteFuture())
    return zero_since_ + config_.scale_to_zero_grace;
  return absl::InfiniteFuture();
}

}  // namespace sluice::core
