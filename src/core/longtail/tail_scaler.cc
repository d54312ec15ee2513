// TailScaler: lazy scaling for busy functions; parking, histogram pre-warming and keep-alive
// for idle ones.
#include "core/longtail/tail_scaler.h"

#include <algorithm>
#include <utility>

#include "common/status.h"

namespace sluice::core {

absl::StatusOr<std::unique_ptr<TailScaler>> TailScaler::Create(const TailScalerConfig& config) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<LazyScaler> lazy, LazyScaler::Create(config.lazy));
  SLUICE_RETURN_IF_ERROR(ValidateIdleHistogramConfig(config.histogram));
  if (config.park_after < absl::ZeroDuration() || config.keep_alive < absl::ZeroDuration() ||
      config.slow_keep_alive < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "park_after, keep_alive and slow_keep_alive must be >= 0");
  }
  return std::unique_ptr<TailScaler>(new TailScaler(config, std::move(lazy)));
}

TailScaler::TailScaler(const TailScalerConfig& config, std::unique_ptr<LazyScaler> lazy)
    : config_(config), lazy_(std::move(lazy)), histogram_(config.histogram) {}

bool TailScaler::QuietSampleIsNoOp(absl::Time now) const {
  return !last_active_.has_value() || now - *last_active_ >= config_.lazy.window;
}

int TailScaler::SamplesWithoutDecision(absl::Time now, absl::Duration interval,
                                       int instances) const {
  return PromiseSamples(now, interval, instances).quiet_first;
}

HorizontalScaler::SamplePromise TailScaler::PromiseSamples(absl::Time now, absl::Duration interval,
                                                           int instances) const {
  if (!last_active_.has_value() || !(interval > absl::ZeroDuration()) || instances < 1)
    return {};
  const absl::Duration tier = std::min(config_.park_after, config_.lazy.window);
  // Samples at now + j x interval, j = 1..k: all before last_active + tier, so resident (a floor
  // of one instance), recent and active whatever their load. An active sample among them keeps
  // the next (tier - epsilon) / interval ones so.
  const int64_t k = (*last_active_ + tier - now - absl::Nanoseconds(1)) / interval;
  if (k <= 0)
    return {};
  // Desired is max(lazy, 1) there: with one instance a lazy scale-in (to 0) changes nothing.
  const int lazy = lazy_->Desired(now);
  if (lazy != instances && !(instances == 1 && lazy < 1))
    return {};
  // Each sample adds at most one high and one low sample to the lazy window (leaving ones only
  // lower the counts): the budgets before a threshold, with the thresholds to classify by.
  SamplePromise p;
  p.samples = SamplePromise::kUnlimited;
  p.highs = lazy_->SamplesBeforeScaleOut(instances);
  p.high_above = lazy_->HighAbove();
  if (instances > 1) {
    p.lows = lazy_->SamplesBeforeScaleIn(instances);
    p.low_below = lazy_->LowBelow();
  }
  // The tier's first stretch, no longer than the any-load bound (what SamplesWithoutDecision
  // returns); the budgets still count the actual highs and lows beyond it.
  p.quiet_first = static_cast<int>(std::min<int64_t>(k, std::min(p.highs, p.lows)));
  p.quiet_run = static_cast<int>((tier - absl::Nanoseconds(1)) / interval);
  return p;
}

int TailScaler::QuietSamplesWithoutDecision(absl::Time now, absl::Duration interval,
                                            int instances) const {
  if (!last_active_.has_value() || !(interval > absl::ZeroDuration()) || instances < 1 ||
      Desired(now) != instances) {
    return 0;
  }
  constexpr int64_t kMax = 1 << 20;
  const absl::Time wake = NextWakeup();
  const int64_t k =
      wake == absl::InfiniteFuture() ? kMax : (wake - now - absl::Nanoseconds(1)) / interval;
  if (k <= 0)
    return 0;
  const bool recent = now - *last_active_ < config_.lazy.window;
  const int floor = Resident(now) ? 1 : 0;
  if (!recent || floor >= instances)  // lazy decisions do not count, or the floor covers them
    return static_cast<int>(std::min(k, kMax));
  if (lazy_->Desired(now) != instances)
    return 0;
  return static_cast<int>(std::min<int64_t>(k, lazy_->SamplesBeforeScaleIn(instances)));
}

void TailScaler::Observe(const LoadSample& sample) {
  seen_ = std::max(seen_, sample.at);
  const bool quiet = sample.rps <= 0 && sample.queued <= 0;
  if (quiet && QuietSampleIsNoOp(sample.at))
    return;
  lazy_->Observe(sample);
  if (quiet)
    return;
  if (last_active_.has_value()) {
    // The idle time since the previous active sample (one interval when back to back).
    const absl::Duration gap = sample.at - *last_active_;
    if (gap > absl::ZeroDuration())
      histogram_.Record(gap);
  }
  last_active_ = sample.at;
}

void TailScaler::Window(absl::Time* from, absl::Time* until) const {
  const absl::Time last = *last_active_;
  absl::Duration keep = config_.keep_alive;
  absl::Duration head = absl::ZeroDuration();
  if (config_.prewarm) {
    const IdleWindows w = histogram_.Windows();
    if (w.representative) {
      keep = w.keep_alive_until;
      head = w.prewarm;
    }
  }
  if (!config_.cached_start_fits_slo) {
    keep = std::max(keep, config_.slow_keep_alive);
    head = absl::ZeroDuration();
  }
  // Parked from the last use until the pre-warm time only if the head is past the park delay.
  *from = head > config_.park_after ? last + head : last;
  *until = last + std::max(keep, config_.park_after);
}

bool TailScaler::Resident(absl::Time now) const {
  if (!last_active_.has_value())
    return false;
  if (now - *last_active_ < config_.park_after)
    return true;
  absl::Time from, until;
  Window(&from, &until);
  return now >= from && now < until;
}

// The lazy scaler's decision counts only while its window still holds an active sample: an
// idle function is not sampled further by an event-driven driver, so its last decision would
// otherwise stick.
int TailScaler::Desired(absl::Time now) const {
  seen_ = std::max(seen_, now);
  const int floor = Resident(now) ? 1 : 0;
  const bool recent = last_active_.has_value() && now - *last_active_ < config_.lazy.window;
  const int busy = recent ? lazy_->Desired(now) : 0;
  return std::clamp(std::max(busy, floor), config_.lazy.min_instances,
                    config_.lazy.max_instances);
}

int TailScaler::ActiveWanted(absl::Time now) const {
  seen_ = std::max(seen_, now);
  if (last_active_.has_value() && now - *last_active_ < config_.park_after)
    return Desired(now);
  return 0;
}

absl::Time TailScaler::NextWakeup() const {
  if (!last_active_.has_value())
    return absl::InfiniteFuture();
  absl::Time from, until;
  Window(&from, &until);
  absl::Time next = absl::InfiniteFuture();
  for (absl::Time t : {*last_active_ + config_.park_after, *last_active_ + config_.lazy.window,
                       from, until}) {
    if (t > seen_)
      next = std::min(next, t);
  }
  return next;
}

}  // namespace sluice::core
