// HybridAutoscaler: HAS-GPU's hybrid vertical + horizontal autoscaler (Algorithm 1), a
// core::HybridScaler, one per function. The simulator and the controller feed it load samples and
// apply the actions it returns (core/policy/hybrid.h). Pure: time comes in as arguments. Not
// thread-safe.
#ifndef SLUICE_CORE_HASGPU_HYBRID_AUTOSCALER_H_
#define SLUICE_CORE_HASGPU_HYBRID_AUTOSCALER_H_

#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "core/hasgpu/capacity_model.h"
#include "core/hasgpu/kalman_rps_predictor.h"
#include "core/policy/hybrid.h"

namespace sluice::core {

// Every parameter, its default and why. The paper names alpha, beta, Delta I_q, T_cooldown and
// R_min but gives no value for any of them; all defaults below are ours.
//   alpha        (0, 1]  scale up when R > alpha x C_f. 0.8: 20 % headroom absorbs the error of
//                        a one-sample-ahead estimate and covers the cold start of a new pod;
//                        the same target as Kubernetes' HPA examples and Knative's 70 % target
//                        utilisation rounded up (vertical steps are fast, so less headroom).
//   beta         [0, alpha) scale down when R < beta x C_f. 0.5: a hysteresis band twice as
//                        wide as the headroom, so noise does not flip a pod up and down.
//   quota_step   (0, 1]  Delta I_q, the time-quota step. 0.1: the granularity of the V100 profile
//                        grid (rapp-hasgpu-v100-sm-quota-profiles, quotas 10 %..100 %), where the
//                        predictor is measured; finer steps buy little after rounding to tokens.
//   sm_step      (0, 1]  SM partitions offered to new pods: multiples of sm_step. 0.1: coarse
//                        partitions make functions share partition types, so alignment packs.
//   cooldown_s   >= 0    T_cooldown between scale-downs. 30 s: Knative's scale-to-zero grace; a
//                        shorter one lets a diurnal dip release pods that the next burst needs.
//   r_min        >= 0    R_min, requests/s the last pod must still serve: 1 (a trickle never
//                        waits for a cold start). The last pod is never removed.
//   max_partition_types >= 1  distinct SM partitions per GPU. 2: one type per GPU would strand
//                        the remainder of a GPU whenever a function's best partition does not
//                        divide 1; more types bring back the fragmentation alignment avoids.
//   slo_fraction (0, 1]  CapacityOptions::slo_fraction: a configuration serves within the SLO
//                        when its batch latency <= slo_fraction x SLO. 0.5 (queueing for the batch
//                        in flight plus its own batch).
//   max_new_pods >= 1    new pods per decision (guards a runaway on a bad latency model): 64.
//   queue_drain_s > 0    the measured load is rps + queued / queue_drain_s (a backlog is demand
//                        the next interval must serve): 1 s, as the baselines' reactive scaler.
//   kalman       see kalman_rps_predictor.h.
struct HybridAutoscalerConfig {
  double alpha = 0.8;
  double beta = 0.5;
  absl::Duration cooldown = absl::Seconds(30);
  double r_min = 1.0;
  int max_partition_types = 2;
  int max_new_pods = 64;
  absl::Duration queue_drain = absl::Seconds(1);
  CapacityOptions capacity;  // slo_fraction, sm_step, quota_step
  KalmanConfig kalman;
};
// InvalidArgument naming the field when a value is outside its range above.
[[nodiscard]] absl::Status ValidateHybridConfig(const HybridAutoscalerConfig& config);

// Decide(now, pods, state), with R the Kalman estimate and C_f = sum of the pods' capacities
// (capacity_model.h; pods still loading count):
//  - no pods: add one, the cheapest configuration serving max(R / alpha, r_min).
//  - R > alpha x C_f (scale up), gap = R / alpha - C_f:
//    1. vertical: pods by SM partition descending (ties: lower instance id); each steps its time
//       quota by quota_step while the gap is not covered (Delta R - Delta C' > 0) and the new q
//       stays within the pod's maximum expandable quota on its GPU (aligned_gpu.h), then drops
//       top steps that added no capacity (SM-bound pods gain nothing from time); one kSetQuota.
//    2. horizontal on used GPUs, ascending H_G (HGO): the first GPU where a new pod (an existing
//       partition type with free time, or a new type within max_partition_types) can cover the
//       gap gets the cheapest such pod (RaPPbyThroughput).
//    3. otherwise a new (idle) GPU with the cheapest pod covering the gap, or the largest pod
//       when none covers it, repeating 2-3 until the gap is covered, no GPU is left,
//       max_instances or max_new_pods is reached.
//  - R < beta x C_f and now >= the end of the cool-down (scale down), target capacity T =
//    max(R / alpha, r_min): pods by SM partition ascending (ties: newest first) step their quota
//    down by quota_step while the total stays >= T; a pod whose next step would reach q <= 0 is
//    removed (kRemove) if the rest still serves T and more than max(1, min_instances) pods remain.
//    Any scale-down starts the cool-down.
// Deviations from Algorithm 1, and why: the paper's gap is R - alpha x C_f, which leaves R >
// alpha x C' after the action, so every following sample scales again by a shrinking amount; we
// fill to R / alpha in one decision. The paper's scale-down goes to C' = R, which the next sample
// would scale up again; we stop at R / alpha. The paper tries only the least-HGO GPU before
// opening a new one; we try used GPUs in ascending HGO (its text: "if no GPU has sufficient
// resources"). Actions never name a GPU without the function's memory, and never break the
// alignment rule (property-tested).
class HybridAutoscaler : public HybridScaler {
 public:
  static absl::StatusOr<std::unique_ptr<HybridAutoscaler>> Create(
      const HybridAutoscalerConfig& config, const HasGpuFunction& function);

  std::string_view name() const override { return "has-gpu"; }
  void Observe(const LoadSample& sample) override;
  std::vector<ScalingAction> Decide(absl::Time now, const std::vector<PodView>& pods,
                                    const ClusterState& state) override;
  // The end of the cool-down while a scale-down waits for it; InfiniteFuture otherwise.
  absl::Time NextWakeup() const override { return wakeup_; }

  // The Kalman estimate R (requests/s).
  double predicted_rps() const { return kalman_.estimate(); }
  const CapacityModel& capacity() const { return capacity_; }
  const HybridAutoscalerConfig& config() const { return config_; }
  // The first pod of a function: the cheapest configuration serving r_min (the has-gpu policy
  // set's QuotaFor). Falls back to (s 1, q 1, batch 1) when no configuration meets the SLO.
  PodConfig InitialConfig() const;

 private:
  HybridAutoscaler(const HybridAutoscalerConfig& config, const HasGpuFunction& function,
                   KalmanRpsPredictor kalman);

  HybridAutoscalerConfig config_;
  CapacityModel capacity_;
  KalmanRpsPredictor kalman_;
  absl::Time cooldown_until_ = absl::InfinitePast();
  absl::Time wakeup_ = absl::InfiniteFuture();
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_HASGPU_HYBRID_AUTOSCALER_H_
