// ReactiveScaler: the keep-alive horizontal scaler of the static baselines (Exclusive, MPS-l,
// MPS-r). Scales out as soon as load exceeds the deployed capacity; an instance that is no longer
// needed is kept warm for `keep_alive` before it is scaled in. One object per function; driven
// by the simulator / controller with samples and the current time. Not thread-safe.
#ifndef SLUICE_CORE_BASELINES_REACTIVE_SCALER_H_
#define SLUICE_CORE_BASELINES_REACTIVE_SCALER_H_

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "core/policy/horizontal.h"

namespace sluice::core {

struct ReactiveScalerConfig {
  int min_instances = 0;
  int max_instances = 1 << 20;
  // How long an unneeded instance stays before it is scaled in (0 acts as 1 ns: an instance
  // is live at the instant it was last needed and leaves right after).
  absl::Duration keep_alive = absl::Seconds(60);
  // Queued requests should drain within this time: they add queued / (drain * capacity)
  // instances' worth of demand.
  absl::Duration queue_drain = absl::Seconds(1);
  // Per-instance throughput used when a sample carries none (<= 0 there).
  double capacity_rps = 0;
};

// needed(sample) = ceil((rps + queued / queue_drain_s) / capacity), capped at max_instances,
// where capacity is the sample's capacity_rps_per_instance if > 0, else the config's. With no
// capacity known at all, any load needs max(1, instances deployed) and no load needs 0.
//
// Instance k (1-based) is *needed* at a sample when needed >= k. Desired(now) is the number of
// levels k whose last-needed time t_k satisfies now < t_k + keep_alive, clamped to
// [min_instances, max_instances]. Hence: scale-out is immediate (the sample itself sets t_k),
// each surplus instance leaves exactly keep_alive after it was last needed (several at once if
// they became surplus together), and Desired is monotone in load (more load sets more levels).
// ceil((rps + queued / queue_drain_s) / capacity), clamped to [0, max_instances], where capacity
// is the sample's capacity_rps_per_instance if > 0, else `fallback_capacity_rps`; with no
// capacity known at all, any load needs min(max(1, instances deployed), max_instances) and no
// load needs 0. Shared by the keep-alive scalers of the baselines.
int InstancesNeeded(const LoadSample& s, double fallback_capacity_rps, absl::Duration queue_drain,
                    int max_instances);

class ReactiveScaler : public HorizontalScaler {
 public:
  // InvalidArgument unless 0 <= min <= max, keep_alive >= 0, queue_drain > 0.
  static absl::StatusOr<std::unique_ptr<ReactiveScaler>> Create(const ReactiveScalerConfig& config);

  std::string_view name() const override { return "reactive"; }
  // Samples must come in non-decreasing `at`.
  void Observe(const LoadSample& sample) override;
  // `now` must be non-decreasing across calls (expired history is pruned).
  int Desired(absl::Time now) const override;
  // When the highest live level above min_instances expires; InfiniteFuture if none. Reflects
  // the pruning done by the latest Desired(now) call, so call Desired(now) first.
  absl::Time NextWakeup() const override;

  const ReactiveScalerConfig& config() const { return config_; }
  // Instances the last sample needed, before keep-alive and clamping.
  int last_needed() const { return last_needed_; }

 private:
  explicit ReactiveScaler(const ReactiveScalerConfig& config) : config_(config) {}

  ReactiveScalerConfig config_;
  int last_needed_ = 0;
  // last_needed_at_[k - 1] = last time level k was needed. Non-increasing in k (each sample
  // refreshes a prefix), so expiry removes levels from the back. Pruned lazily by Desired().
  mutable std::vector<absl::Time> last_needed_at_;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_BASELINES_REACTIVE_SCALER_H_
