// The HAS-GPU paper's policy sets (Gu et al., HAS-GPU, §4.3) as registry factories: "kserve"
// (the mainstream baseline), "fast-gshare" (the spatio-temporal baseline) and "has-gpu" itself.
// Factories only; policy_registry.cc registers them. Each PolicySet is owned by one loop (not
// thread-safe). Every param is optional; defaults and the reasons for them are listed here.
#ifndef SLUICE_CORE_REGISTRY_HASGPU_POLICIES_H_
#define SLUICE_CORE_REGISTRY_HASGPU_POLICIES_H_

#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"

#include "core/hasgpu/capacity_model.h"
#include "core/registry/policy_registry.h"

namespace sluice::core {

// kserve: KServe on Knative. One whole GPU per instance (ExclusivePlacement, quota {1, 1, 1}),
// Knative's KPA (core/baselines/kpa_scaler.h) with KServe's / Knative's defaults:
//   target_concurrency     > 0 or 0 = auto: per-instance concurrency target. Knative's default
//                          soft target (100) is never reached by a GPU model server, so it would
//                          not scale; auto is the concurrency one instance holds when saturated,
//                          by Little's law its profiled throughput x its request latency
//                          (capacity_rps x BatchLatency(1, 1, 1)), or max_batch when either is
//                          unknown: with target_utilization, scale out at 70 % of throughput  [0]
//   target_utilization     (0, 1]   container-concurrency-target-percentage       [0.7]
//   stable_window_s        > 0                                                     [60]
//   panic_window_s         (0, stable_window_s]                                    [6]
//   panic_threshold_pct    > 0      panic when panic-window demand >= this % of ready [200]
//   max_scale_up_rate      >= 1                                                    [1000]
//   max_scale_down_rate    >= 1                                                    [2]
//   scale_to_zero_grace_s  >= 0                                                    [30]
//   min_replicas           >= 0     KServe's minReplicas; 0 enables scale to zero  [1]
//   node_order             most_allocated | least_allocated                       [most_allocated]
// LoadSample has no concurrency; KPA's is rps x request latency + queued (Little's law), with the
// request latency BatchLatency(1, 1, 1) of the function's model (1 / capacity_rps, else 100 ms).
absl::StatusOr<std::unique_ptr<PolicySet>> MakeKservePolicySet(std::span<const PolicyParam> params,
                                                               const std::string& file);

// fast-gshare: FaST-GShare (ICPP'23) with a real time quota: every instance of a function holds
// the same fixed SM partition s and time quota q ({s, s, q}; static, non-work-conserving), placed
// by spatio-temporal packing (HasGpuPlacement's slot rule, best fit: most held first, no limit on
// partition types), scaled only horizontally by the eager ReactiveScaler on the capacity of
// (s, q). Relation to fast-gs+: fast-gs+ is the Dilu paper's FaST-GShare, written when the engine
// had no time quota, so it folds q into one static share limit x q and takes s from Dilu's
// profile; fast-gshare keeps s and q apart (the engine and the token server enforce both) and
// derives them from the latency model. fast-gs+ is unchanged.
//   sm              (0, 1] or 0 = derived                                          [0]
//   time_quota      (0, 1] or 0 = derived                                          [0]
//                   derived: the grid (s, q) serving the most requests per unit of s x q within
//                   the SLO (FaST-GShare's profiler picks the most efficient configuration);
//                   without a latency model: s = profiled limit, q = 1. Training: profiled, q 1.
//   sm_step, quota_step, slo_fraction   the grid and SLO bound of the derivation   [0.1, 0.1, 0.5]
//   keep_alive_s    >= 0                                                           [10]
//   min_instances   >= 0    (OpenFaaS keeps one replica)                            [1]
//   queue_drain_s   > 0                                                            [1]
absl::StatusOr<std::unique_ptr<PolicySet>> MakeFastGsharePolicySet(
    std::span<const PolicyParam> params, const std::string& file);

// has-gpu: HasGpuPlacement (argmin HGO, SM-partition alignment) + HybridAutoscaler (Algorithm 1,
// the `hybrid` part: callers drive it instead of MakeScaler + placement for inference functions)
// + static, non-work-conserving shares. QuotaFor gives the initial (s, q): the cheapest grid
// configuration serving r_min within the SLO; training functions get their profiled quota and a
// ReactiveScaler. Params (core/hasgpu/hybrid_autoscaler.h says why each default):
//   alpha [0.8], beta [0.5] (< alpha), quota_step [0.1], sm_step [0.1], cooldown_s [30],
//   r_min [1], max_partition_types [2], slo_fraction [0.5], max_new_pods [64],
//   queue_drain_s [1], kalman_a [1], kalman_h [1], kalman_q [1], kalman_d [0.25],
//   kalman_p0 [0.25], keep_alive_s [60] (training's ReactiveScaler only).
absl::StatusOr<std::unique_ptr<PolicySet>> MakeHasGpuPolicySet(std::span<const PolicyParam> params,
                                                               const std::string& file);

// The HAS-GPU view of a function's traits (min_instances raised to 1; capacity per GPU for the
// no-latency-model fallback is capacity_rps / profiled.held()).
HasGpuFunction HasGpuFunctionOf(const FunctionTraits& f);

}  // namespace sluice::core

#endif  // SLUICE_CORE_REGISTRY_HASGPU_POLICIES_H_
