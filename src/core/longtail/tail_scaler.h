// TailScaler: the `sluice` set's HorizontalScaler (issue 13 item 6). One per function, fed one
// LoadSample per sample interval by the simulator or the controller; time comes in as an
// argument. Not thread-safe.
//
// Busy functions scale as Dilu's lazy scaler says (core/dilu/lazy_scaler.h, built with the
// function's own minimum, so an idle function may go to zero) while its window (40 s) still holds
// an active sample; after that only the tiers below count. The long tail is handled by an
// arrival predictor and three tiers of idleness:
//   active    an arrival (or a queued request) within `park_after` of now: every instance holds
//             its SM share (ActiveWanted = Desired);
//   parked    no arrival for `park_after`: instances stay resident in GPU memory without an SM
//             share (ActiveWanted = 0; the driver un-parks one within a token period when a
//             request reaches it), at least one instance is kept until the keep-alive ends;
//   demoted   after the keep-alive: Desired = 0, the instance retires and its parameters stay
//             in the node's host cache, so the next cold start loads over PCIe (no process start
//             with a pre-started pool).
// The keep-alive after the last active sample comes from the function's idle-time histogram
// (core/baselines/idle_time_histogram.h, Shahrad et al. ATC'20's hybrid histogram, 1-minute bins
// over 4 hours): when representative, resident from `prewarm` (head, x 0.9) to `keep_alive_until`
// (tail, x 1.1) after the last use (pre-warming: a parked instance is loaded before the predicted
// next arrival); otherwise a fixed `keep_alive`. A function whose cached cold start (traits:
// `cached_start` + batch-1 latency at its share) would not fit `cold_slo_fraction` of its SLO is
// never demoted before `slow_keep_alive`: demoting it would turn its next request into an SLO
// violation.
#ifndef SLUICE_CORE_LONGTAIL_TAIL_SCALER_H_
#define SLUICE_CORE_LONGTAIL_TAIL_SCALER_H_

#include <memory>
#include <optional>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "core/baselines/idle_time_histogram.h"
#include "core/dilu/lazy_scaler.h"
#include "core/policy/horizontal.h"

namespace sluice::core {

struct TailScalerConfig {
  LazyScalerConfig lazy;  // busy functions (min_instances: the function's own floor)
  absl::Duration park_after = absl::Seconds(10);
  absl::Duration keep_alive = absl::Minutes(5);
  absl::Duration slow_keep_alive = absl::Hours(24);
  IdleHistogramConfig histogram{absl::Minutes(1), 240, 5, 99, 0.1, 2, 10};
  bool prewarm = true;  // use the histogram (false: always the fixed keep-alive)
  // Set by the policy set per function: true when a cold start from the host cache meets
  // cold_slo_fraction x SLO, so demotion is safe.
  bool cached_start_fits_slo = true;
};

class TailScaler final : public HorizontalScaler {
 public:
  // InvalidArgument when the lazy config or the histogram config is invalid, or park_after,
  // keep_alive or slow_keep_alive is negative.
  static absl::StatusOr<std::unique_ptr<TailScaler>> Create(const TailScalerConfig& config);

  std::string_view name() const override { return "sluice-tail"; }
  // Samples in non-decreasing time order. A sample with rps > 0 or queued > 0 is active.
  void Observe(const LoadSample& sample) override;
  int Desired(absl::Time now) const override;
  int ActiveWanted(absl::Time now) const override;
  // The next park, lazy-window end, pre-warm or demotion time after the latest time seen (by
  // Observe, Desired or ActiveWanted); InfiniteFuture when none.
  absl::Time NextWakeup() const override;
  // Quiet samples are ignored (the lazy window too) before the first active sample and once the
  // lazy window has passed since the last one, so the driver may skip them.
  bool QuietSampleIsNoOp(absl::Time now) const override;
  // The lazy scaler's promise, while every sample of the batch falls in the active tier and the
  // lazy window of the last active sample (so no load can move a tier), and the batch is no
  // longer than min(park_after, lazy window) (so an active sample within it cannot bring a
  // wake-up into it).
  int SamplesWithoutDecision(absl::Time now, absl::Duration interval,
                             int instances) const override;
  // Refined: the lazy scaler's bound, with the tier kept by any active sample (quiet_run: the
  // samples within min(park_after, lazy window) of it).
  SamplePromise PromiseSamples(absl::Time now, absl::Duration interval,
                               int instances) const override;
  // Before NextWakeup the tiers stand still; quiet samples never add a high sample, so only a lazy
  // scale-in can come, and not even that counts while the resident floor covers the instances.
  int QuietSamplesWithoutDecision(absl::Time now, absl::Duration interval,
                                  int instances) const override;

  // Whether the function's instances may be demoted at `now` (for tests and traces).
  bool Resident(absl::Time now) const;
  const IdleTimeHistogram& histogram() const { return histogram_; }

 private:
  TailScalerConfig config_;
  std::unique_ptr<LazyScaler> lazy_;
  IdleTimeHistogram histogram_;
  std::optional<absl::Time> last_active_;
  // Latest time seen; Desired / ActiveWanted (const) advance it, so NextWakeup after a
  // reconciliation at a wake-up time returns the next one.
  mutable absl::Time seen_ = absl::InfinitePast();
  TailScaler(const TailScalerConfig& config, std::unique_ptr<LazyScaler> lazy);
  // Resident window [from, until) after the last active sample.
  void Window(absl::Time* from, absl::Time* until) const;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_LONGTAIL_TAIL_SCALER_H_
