// QuartFunctionScaler: the `quart` policy set's per-function HorizontalScaler, for functions
// (stage functions included) that no declared pipeline drives. QUART's sizing without the
// pipeline: the G/G/c replicas that keep the function's sojourn within its target (mmc_model.h,
// Poisson arrivals assumed: a LoadSample carries no CV), scale-out on the sample that needs it,
// and the smoother's hold before a surplus replica leaves. Used by core/registry's quart set;
// driven by the simulator and the controller. Not thread-safe.
#ifndef SLUICE_CORE_QUART_QUART_FUNCTION_SCALER_H_
#define SLUICE_CORE_QUART_QUART_FUNCTION_SCALER_H_

#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "core/policy/horizontal.h"

namespace sluice::core {

struct QuartFunctionScalerConfig {
  int min_instances = 0;
  int max_instances = 1 << 20;
  // mu of one instance when a sample carries none; with neither, any load needs
  // max(1, deployed) instances.
  double capacity_rps = 0;
  double service_cv = 0.2;                        // >= 0
  absl::Duration latency_target;                  // sojourn target (> 0, finite)
  absl::Duration hold = absl::Seconds(30);        // surplus lifetime (the smoother's base_hold)
  absl::Duration queue_drain = absl::Seconds(1);  // queued / drain counts as extra load
};

// needed(sample) = 0 without load, else ReplicasForTarget(rps + queued / queue_drain_s,
// capacity, latency_target, max_instances, 1.0, service_cv). Instance k is needed at a sample
// when needed >= k; Desired(now) counts the levels needed within the last `hold`, clamped to
// [min_instances, max_instances]: scale-out is immediate, each surplus instance leaves `hold`
// after it was last needed.
class QuartFunctionScaler final : public HorizontalScaler {
 public:
  // InvalidArgument naming the field unless 0 <= min <= max, capacity_rps >= 0, service_cv >= 0,
  // latency_target > 0 and finite, hold >= 0 and queue_drain > 0 (finite).
  static absl::StatusOr<std::unique_ptr<QuartFunctionScaler>> Create(
      const QuartFunctionScalerConfig& config);

  std::string_view name() const override { return "quart-function"; }
  // Samples in non-decreasing `at`.
  void Observe(const LoadSample& sample) override;
  int Desired(absl::Time now) const override;
  // When the highest live level above min_instances expires; InfiniteFuture if none. Reflects
  // the pruning of the latest Desired(now) call (call it first, as for ReactiveScaler).
  absl::Time NextWakeup() const override;

  int last_needed() const { return last_needed_; }

 private:
  explicit QuartFunctionScaler(const QuartFunctionScalerConfig& c) : config_(c) {}

  QuartFunctionScalerConfig config_;
  int last_needed_ = 0;
  // Per level, non-increasing in the level; pruned lazily by Desired().
  mutable std::vector<absl::Time> last_needed_at_;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_QUART_QUART_FUNCTION_SCALER_H_
