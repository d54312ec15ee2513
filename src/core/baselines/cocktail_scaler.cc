// CocktailScaler (see cocktail_scaler.h).
#include "core/baselines/cocktail_scaler.h"

#include <algorithm>
#include <cmath>

namespace sluice::core {
namespace {

constexpr double kNoLoadRps = 1e-3;

bool Positive(absl::Duration d) {
  return d > absl::ZeroDuration() && d != absl::InfiniteDuration();
}

int Instances(double rps, double capacity, int max) {
  if (!(rps > 0))
    return 0;
  if (!(capacity > 0))
    return std::min(1, max);
  return static_cast<int>(std::min<double>(std::ceil(rps / capacity - 1e-9), max));
}

}  // namespace

absl::StatusOr<std::unique_ptr<CocktailScaler>> CocktailScaler::Create(const CocktailConfig& c) {
  if (c.min_instances < 0 || c.max_instances < c.min_instances)
    return absl::InvalidArgumentError("field 'max_instances': need 0 <= min <= max");
  if (!(c.capacity_rps >= 0) || !std::isfinite(c.capacity_rps))
    return absl::InvalidArgumentError("field 'capacity_rps': must be finite and >= 0");
  if (!Positive(c.interval))
    return absl::InvalidArgumentError("field 'interval': must be finite and > 0");
  if (c.horizon < absl::ZeroDuration() || c.horizon == absl::InfiniteDuration())
    return absl::InvalidArgumentError("field 'horizon': must be finite and >= 0");
  if (!(c.alpha > 0 && c.alpha <= 1))
    return absl::InvalidArgumentError("field 'alpha': must be in (0, 1]");
  if (!(c.beta >= 0 && c.beta <= 1))
    return absl::InvalidArgumentError("field 'beta': must be in [0, 1]");
  if (!(c.over_provision >= 0) || !std::isfinite(c.over_provision))
    return absl::InvalidArgumentError("field 'over_provision': must be finite and >= 0");
  if (c.keep_alive < absl::ZeroDuration() || c.keep_alive == absl::InfiniteDuration())
    return absl::InvalidArgumentError("field 'keep_alive': must be finite and >= 0");
  if (!Positive(c.queue_drain))
    return absl::InvalidArgumentError("field 'queue_drain': must be finite and > 0");
  return std::unique_ptr<CocktailScaler>(new CocktailScaler(c));
}

void CocktailScaler::EndInterval(double capacity) {
  if (!have_level_) {
    level_ = interval_peak_;
    trend_ = 0;
    have_level_ = true;
  } else {
    const double previous = level_;
    level_ = config_.alpha * interval_peak_ + (1 - config_.alpha) * (level_ + trend_);
    trend_ = config_.beta * (level_ - previous) + (1 - config_.beta) * trend_;
  }
  const double steps = absl::FDivDuration(config_.horizon, config_.interval);
  forecast_ = level_ + trend_ * steps;
  // Holt's level decays geometrically after load stops; a vanishing forecast is no load (else
  // one instance would stay forever).
  if (!(forecast_ >= kNoLoadRps))
    forecast_ = 0;
  proactive_ = Instances(forecast_ * (1 + config_.over_provision), capacity, config_.max_instances);
  interval_peak_ = 0;
}

void CocktailScaler::Observe(const LoadSample& s) {
  const double capacity =
      s.capacity_rps_per_instance > 0 ? s.capacity_rps_per_instance : config_.capacity_rps;
  const double rps = std::isfinite(s.rps) ? std::max(0.0, s.rps) : 0.0;
  if (interval_start_ == absl::InfinitePast())
    interval_start_ = s.at;
  while (s.at >= interval_start_ + config_.interval) {
    EndInterval(capacity);
    interval_start_ += config_.interval;
  }
  interval_peak_ = std::max(interval_peak_, rps);
  const double load = rps + std::max(0, s.queued) / absl::ToDoubleSeconds(config_.queue_drain);
  reactive_ = Instances(load, capacity, config_.max_instances);
  const int need = std::max(reactive_, proactive_);
  if (static_cast<int>(last_needed_at_.size()) < need)
    last_needed_at_.resize(need, s.at);
  std::fill(last_needed_at_.begin(), last_needed_at_.begin() + need, s.at);
}

int CocktailScaler::Desired(absl::Time now) const {
  while (!last_needed_at_.empty() && last_needed_at_.back() != now &&
         now >= last_needed_at_.back() + config_.keep_alive)
    last_needed_at_.pop_back();
  return std::clamp(static_cast<int>(last_needed_at_.size()), config_.min_instances,
                    config_.max_instances);
}

absl::Time CocktailScaler::NextWakeup() const {
  if (static_cast<int>(last_needed_at_.size()) <= config_.min_instances)
    return absl::InfiniteFuture();
  return last_needed_at_.back() + std::max(config_.keep_alive, absl::Nanoseconds(1));
}

}  // namespace sluice::core
