// The "quart" registry entry: QUART (Lin et al., docs/quart.md) as a PolicySet. Its pipeline
// scaler is an adapter over core/quart's QuartScaler (key-stage detection, PID corrector, CV
// smoothing, CPU compensation) implementing core::PipelineScaler; its placement is
// QuartPlacement (key-stage replicas dispersed by KL divergence, cache-aware, others packed);
// stage instances take whole GPUs (quota {1, 1}, not work-conserving); functions that no
// declared pipeline drives get a QuartFunctionScaler (G/G/c sizing, the smoother's hold).
// Factory only; policy_registry.cc registers it. The PolicySet and the scalers it makes are
// owned by one loop (not thread-safe).
//
// For the caller (simulator, controller): drive MakePipelineScaler's object every sampling
// interval (Observe, then Decide with the pipeline's free CPU cores), place new replicas of a
// stage with InstanceDemand::key_stage = that stage's decision.key and cached_on = the nodes
// whose parameter store holds the stage; a stage's FunctionTraits give capacity_rps (one GPU
// replica's throughput; or, when 0, max_batch / latency(max_batch) from the latency model),
// min/max instances; PipelineStageTraits give the stage's latency target (0: slo / stages), its
// service CV and CPU profile (cpu_slowdown 0: never on CPU). MakePipelineScaler returns nullptr
// when a stage's throughput is unknown or the vectors' sizes differ: the stages then scale on
// their own with MakeScaler.
//
// Params (all optional; defaults are the paper's where it gives one, else ours, with the
// reasons in core/quart's headers and docs/quart.md):
//   kp, ki, kd                PID gains (Eq. 3), >= 0                          [2.0, 0.3, 0.1]
//   error_limit               relative-error clip, > 0                         [4]
//   integral_limit            anti-windup clamp, error-seconds, >= 0           [10]
//   max_step                  replicas one decision may add, > 0               [8]
//   correction_bound_factor   0 (bare PID) or >= 1: cap at factor x G/G/c need [2.0]
//   model_weight              M/M/c vs measured wait in the key estimate [0,1] [0.5]
//   unstable_wait_cap_s       an overloaded stage's model wait cap, > 0        [10]
//   key_share_factor          key when latency share >= factor / n, >= 1       [1.5]
//   beta_min                  Eq. 7's smoothing weight floor, [0, 1]           [0.5]
//   hold_s                    surplus persists this long before a reclaim      [30]
//   propagation_hold_factor   x upstream sojourn added to the hold, >= 0       [2]
//   burst_cv                  upstream CV that restarts the hold, > 0          [1.5]
//   max_reclaim_per_step      replicas one reclaim removes, >= 1               [1]
//   cpu_max_duration_s        CPU compensation lasts at most this, > 0         [60]
//   cache_slack               key instances a caching node may exceed, >= 0    [1]
//   period_s                  decision period (>= the caller's interval), > 0  [1]
//   total_replicas            R_total: GPU replicas of all stages together,
//                             0 = unbounded, >= 0 (QuartConfig)               [0]
//   rebalance                 true: at R_total, stages over their need give
//                             replicas to the stages short of theirs (not in
//                             the paper; needs total_replicas > 0; QuartConfig) [false]
//   rebalance_headroom        needs sized at this x the rate, >= 1             [1.25]
//   rebalance_cooldown_s      a stage scaled up this recently never gives, >= 0 [0]
//   rebalance_from_entry      needs from the entry rate, shares of R_total,
//                             stages below their share take (false: own rate,
//                             only budget-cut stages take)                     [true]
//   min_replicas              floor on each stage's GPU replicas, >= 0         [1]
//   queue_drain_s             per-function scaler: queue drains within, > 0    [1]
#ifndef SLUICE_CORE_REGISTRY_QUART_POLICIES_H_
#define SLUICE_CORE_REGISTRY_QUART_POLICIES_H_

#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"

#include "core/registry/policy_registry.h"

namespace sluice::core {

absl::StatusOr<std::unique_ptr<PolicySet>> MakeQuartPolicySet(std::span<const PolicyParam> params,
                                                              const std::string& file);

}  // namespace sluice::core

#endif  // SLUICE_CORE_REGISTRY_QUART_POLICIES_H_
