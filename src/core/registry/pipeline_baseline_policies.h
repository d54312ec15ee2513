// The QUART paper's baselines (§8.1) as registry factories, applied per pipeline stage:
// "inferline" (InferLine's planner + network-calculus tuner, a PipelineScaler over the whole
// pipeline; core/baselines/inferline_scaler.h) and "cocktail" (Cocktail's proactive
// predictor + reactive fallback autoscaler, one HorizontalScaler per stage function;
// core/baselines/cocktail_scaler.h). Both give every stage instance whole GPUs (quota {1, 1},
// ExclusivePlacement, not work-conserving), as QUART's stages have, so the comparison is the
// scaling. "infless" (INFless's published defaults over the infless+ machinery) is in
// baseline_policies.h. Factories only; policy_registry.cc registers them. Each PolicySet is
// owned by one loop (not thread-safe). Stage throughput and budget follow stage_sizing.h.
#ifndef SLUICE_CORE_REGISTRY_PIPELINE_BASELINE_POLICIES_H_
#define SLUICE_CORE_REGISTRY_PIPELINE_BASELINE_POLICIES_H_

#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"

#include "core/registry/policy_registry.h"

namespace sluice::core {

// inferline: MakePipelineScaler returns an InferLineScaler (nullptr when a stage's throughput is
// unknown); MakeScaler (a function no pipeline drives) runs the same planner + tuner on a
// one-stage pipeline whose budget is the function's SLO.
//   plan_period_s       planner period and its trace length, > 0   [60]
//   tuner_history_s     tuner envelope history, > 0               [60]
//   scale_down_hold_s   a lower need must hold this long, >= 0     [30]
//   min_replicas        floor per stage, >= 0 (taken as >= 1)      [1]
//   node_order          most_allocated | least_allocated            [most_allocated]
absl::StatusOr<std::unique_ptr<PolicySet>> MakeInferLinePolicySet(
    std::span<const PolicyParam> params, const std::string& file);

// cocktail: no pipeline scaler (stages scale on their own, as Cocktail scales each model).
//   interval_s          predictor step, > 0                        [5]
//   horizon_s           forecast this far ahead, >= 0              [10]
//   alpha, beta         Holt level / trend weights, (0,1] / [0,1]  [0.5, 0.3]
//   over_provision      fraction above the forecast, >= 0          [0.1]
//   keep_alive_s        surplus instance lifetime, >= 0            [60]
//   queue_drain_s       queued requests drain within, > 0          [1]
//   min_instances       floor per function, >= 0                   [1]
//   node_order          most_allocated | least_allocated            [most_allocated]
absl::StatusOr<std::unique_ptr<PolicySet>> MakeCocktailPolicySet(
    std::span<const PolicyParam> params, const std::string& file);

}  // namespace sluice::core

#endif  // SLUICE_CORE_REGISTRY_PIPELINE_BASELINE_POLICIES_H_
