// KpaScaler: Knative's Pod Autoscaler (KPA), the horizontal scaler of KServe, as a
// HorizontalScaler: concurrency-based with a stable and a panic window, scale-rate limits and a
// scale-to-zero grace period. Used by the kserve policy set (core/registry) and reusable by any
// request-driven baseline. One object per function; not thread-safe.
#ifndef SLUICE_CORE_BASELINES_KPA_SCALER_H_
#define SLUICE_CORE_BASELINES_KPA_SCALER_H_

#include <deque>
#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "core/policy/horizontal.h"

namespace sluice::core {

// Knative's defaults (config-autoscaler) unless noted.
struct KpaConfig {
  // Per-instance concurrency target (Knative `target`, KServe `scaleTarget`), > 0. Knative's
  // default soft target is 100, which a GPU model server never reaches (see kserve in
  // core/registry/hasgpu_policies.h for the default the kserve policy set picks).
  double target_concurrency = 100;
  double target_utilization = 0.7;  // container-concurrency-target-percentage, (0, 1]
  absl::Duration stable_window = absl::Seconds(60);
  absl::Duration panic_window = absl::Seconds(6);  // 10 % of the stable window
  double panic_threshold = 2.0;                    // 200 %: panic when desired >= 2 x ready
  double max_scale_up_rate = 1000;                 // per evaluation: <= ceil(rate x ready)
  double max_scale_down_rate = 2;                  // per evaluation: >= floor(ready / rate)
  absl::Duration scale_to_zero_grace = absl::Seconds(30);
  int min_instances = 1;  // KServe's minReplicas default; 0 enables scale to zero
  int max_instances = 1 << 20;
  // Request service time for Little's law: the sample's load is rps x request_latency +
  // queued requests (in flight plus waiting), since LoadSample carries no concurrency.
  absl::Duration request_latency = absl::Milliseconds(100);
};

// Each Observe(sample) is one KPA evaluation at sample.at:
//   c = rps x request_latency + queued (observed concurrency across the function's instances);
//   stable = mean of c over samples in (at - stable_window, at], panic = the same over
//   panic_window; per-instance target t = target_concurrency x target_utilization;
//   ready = max(1, sample.instances);
//   desired_stable = ceil(stable / t), desired_panic = ceil(panic / t);
//   panic mode starts when desired_panic / ready >= panic_threshold (the rounded-up count, as
//   Knative's dppc / readyPodsCount) and ends once a whole stable
//   window passed since it started without crossing the threshold again; in panic mode the
//   desired count is max(desired_panic, desired_stable, the previous desired) (never down);
//   else desired_stable. Then clamped to [floor(ready / max_scale_down_rate),
//   ceil(ready x max_scale_up_rate)] and to [min_instances, max_instances].
// Scale to zero: a computed 0 is reported as 1 until scale_to_zero_grace after the first
// evaluation that computed 0 (and only when min_instances is 0); NextWakeup() names that moment.
// So an instance outlives its last request by the stable window (the mean must reach 0) plus
// the grace: 90 s with Knative's defaults. While at zero the caller holds requests (Knative's
// activator; the simulator's and the gateway's held queues) and reports them as `queued`: the
// next evaluation then wants ceil(queued / target) >= 1 instances, however long it was idle.
// Before the first sample Desired() is min_instances. The ceil of a stable mean slightly above a
// multiple of the target rounds up, as in Knative.
class KpaScaler : public HorizontalScaler {
 public:
  // InvalidArgument naming the field for out-of-range values (targets, rates and windows > 0,
  // panic_window <= stable_window, rates >= 1, 0 <= min <= max).
  static absl::StatusOr<std::unique_ptr<KpaScaler>> Create(const KpaConfig& config);

  std::string_view name() const override { return "kpa"; }
  // Samples in non-decreasing `at`.
  void Observe(const LoadSample& sample) override;
  int Desired(absl::Time now) const override;
  absl::Time NextWakeup() const override;

  bool in_panic() const { return panic_since_ != absl::InfiniteFuture(); }
  const KpaConfig& config() const { return config_; }

 private:
  explicit KpaScaler(const KpaConfig& c) : config_(c) {}
  double WindowMean(absl::Time at, absl::Duration window) const;

  KpaConfig config_;
  std::deque<std::pair<absl::Time, double>> samples_;  // within the stable window
  absl::Time panic_since_ = absl::InfiniteFuture();
  int desired_ = -1;                                // last evaluation (-1: none yet)
  absl::Time zero_since_ = absl::InfiniteFuture();  // first evaluation of the current 0 run
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_BASELINES_KPA_SCALER_H_
