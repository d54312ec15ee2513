// HistogramScaler. Levels are never forgotten: a level's histogram is the prior knowledge that
// pre-warms it the next time, so the vector only grows (to the most instances ever needed).
#include "core/baselines/histogram_scaler.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

#include "core/baselines/reactive_scaler.h"

namespace sluice::core {
namespace {

bool FiniteNonNegative(absl::Duration d) {
  return d >= absl::ZeroDuration() && d != absl::InfiniteDuration();
}

}  // namespace

absl::StatusOr<std::unique_ptr<HistogramScaler>> HistogramScaler::Create(
    const HistogramScalerConfig& config) {
  if (config.min_instances < 0 || config.max_instances < config.min_instances) {
    return absl::InvalidArgumentError(
        absl::StrCat("histogram scaler: need 0 <= min <= max (min=", config.min_instances,
                     ", max=", config.max_instances, ")"));
  }
  if (config.queue_drain <= absl::ZeroDuration() ||
      config.queue_drain == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError("histogram scaler: queue_drain must be finite and > 0");
  }
  if (!FiniteNonNegative(config.fallback_keep_alive) || !FiniteNonNegative(config.prewarm_lead)) {
    return absl::InvalidArgumentError(
        "histogram scaler: fallback keep-alive and pre-warm lead must be finite and >= 0");
  }
  if (absl::Status s = ValidateIdleHistogramConfig(config.histogram); !s.ok())
    return s;
  return std::unique_ptr<HistogramScaler>(new HistogramScaler(config));
}

void HistogramScaler::Observe(const LoadSample& sample) {
  last_needed_ =
      InstancesNeeded(sample, config_.capacity_rps, config_.queue_drain, config_.max_instances);
  while (static_cast<int>(levels_.size()) < last_needed_)
    levels_.emplace_back(config_.histogram);
  for (int k = 0; k < last_needed_; ++k) {
    Level& level = levels_[k];
    if (level.last_needed != absl::InfinitePast()) {
      level.histogram.Record(sample.at - level.last_needed);
      level.dirty = true;
    }
    level.last_needed = sample.at;
  }
  last_now_ = std::max(last_now_, sample.at);
}

const IdleWindows& HistogramScaler::WindowsOf(const Level& level) const {
  if (level.dirty) {
    level.windows = level.histogram.Windows();
    level.dirty = false;
  }
  return level.windows;
}

HistogramScaler::Span HistogramScaler::SpanOf(const Level& level) const {
  const IdleWindows& w = WindowsOf(level);
  if (!w.representative)
    return {absl::ZeroDuration(), config_.fallback_keep_alive, false};
  const absl::Duration start = w.prewarm - config_.prewarm_lead;
  if (start <= absl::ZeroDuration())
    return {absl::ZeroDuration(), w.keep_alive_until, false};
  return {start, w.keep_alive_until, true};
}

bool HistogramScaler::Warm(const Level& level, absl::Time now) const {
  if (level.last_needed == absl::InfinitePast())
    return false;
  const absl::Duration d = now - level.last_needed;
  if (d <= absl::ZeroDuration())
    return true;
  const Span span = SpanOf(level);
  return d >= span.from && d < span.until;
}

int HistogramScaler::Desired(absl::Time now) const {
  last_now_ = std::max(last_now_, now);
  int warm = 0;
  for (const Level& level : levels_)
    warm += Warm(level, now) ? 1 : 0;
  return std::clamp(warm, config_.min_instances, config_.max_instances);
}

absl::Time HistogramScaler::NextWakeup() const {
  absl::Time next = absl::InfiniteFuture();
  const auto consider = [&](absl::Time t) {
    if (t > last_now_)
      next = std::min(next, t);
  };
  for (const Level& level : levels_) {
    if (level.last_needed == absl::InfinitePast())
      continue;
    const Span span = SpanOf(level);
    // Unloading happens just after the use; 1 ns is the first instant with d > 0.
    if (span.unload)
      consider(level.last_needed + absl::Nanoseconds(1));
    consider(level.last_needed + span.from);
    consider(level.last_needed + span.until);
  }
  return next;
}

}  // namespace sluice::core
