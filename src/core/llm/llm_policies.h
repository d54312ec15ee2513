// LLM serving policy sets by name, BlitzScale and its baselines: where parameters come from on a
// scale-out, whether the instance serves while loading, whether pools autoscale at all.
//   serverless-llm  SSD + host cache with 5 min keep-alive, no multicast, stop-the-world
//   allcache        every host caches every model (ServerlessLLM's optimum), stop-the-world
//   distserve-full  fixed P/D pools on all GPUs, no autoscaling
//   distserve-half  fixed P/D pools on half the GPUs, no autoscaling
//   blitzscale      global pool + network multicast + interference-free plan + live zigzag +
//                   prefill->decode mutation
//   blitzscale-network           (ablation) + network multicast only
//   blitzscale-interference-free (ablation) + network + interference-free plan (no live)
//   blitzscale-live              (ablation) = blitzscale with best-effort instead of zigzag
// Params and defaults are listed above MakeLlmPolicySet. Pure data; thread-safe (no state).
// CONTRACT (lead, issue 10): used by src/sim/llm. Extend, do not change.
#ifndef SLUICE_CORE_LLM_LLM_POLICIES_H_
#define SLUICE_CORE_LLM_LLM_POLICIES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/blitz/multicast_plan.h"
#include "core/blitz/parameter_pool.h"
#include "core/llm/llm_autoscaler.h"
#include "core/policy/policy_params.h"

namespace sluice::core::llm {

enum class LoadSource { kSsdAndHostCache, kNetworkMulticast };
enum class LiveMode { kOff, kBestEffort, kZigzag };

struct LlmPolicySet {
  std::string name;
  bool autoscale = true;
  double fixed_gpu_fraction = 1.0;  // !autoscale: share of the cluster's GPUs given to P/D pools
  LoadSource source = LoadSource::kSsdAndHostCache;
  blitz::HostCachePolicy host_cache = blitz::HostCachePolicy::kKeepAlive;
  blitz::PlanOptions plan;
  LiveMode live = LiveMode::kOff;
  bool mutation = false;
  LlmScalerConfig scaler;  // bounds filled by the caller from the perf model when left 0
  // Added by zigzag: host_cache == kKeepAlive's keep-alive after last use (PoolConfig.keep_alive)
  absl::Duration keep_alive = absl::Minutes(5);
  // Added by zigzag: ZigzagInput.time_limit_ms for live == kZigzag.
  double zigzag_time_limit_ms = 40;
};

// The set named `name` with `params` applied over its defaults (keys: keep_alive_s,
// scale_down_timeout_s, window_s, kv_usage_upper, lower_fraction, ...). InvalidArgument naming the
// unknown name or parameter (file:line via core::ParamReader, src/core/registry).
// Params (every set unless noted; defaults are LlmScalerConfig's):
//   window_s (1), scale_down_timeout_s (2), kv_usage_upper (0.85), lower_fraction (0.5),
//   prefill_tokens_per_s_per_instance, decode_tokens_per_s_per_instance (0 = from the perf model),
//   min_prefill, max_prefill, min_decode (1), max_decode (2^20);
//   keep_alive_s (300; serverless-llm only); fixed_gpu_fraction (distserve-full 1, -half 0.5;
//   distserve-* only); zigzag_time_limit_ms (40; blitzscale only).
absl::StatusOr<LlmPolicySet> MakeLlmPolicySet(absl::string_view name,
                                              const std::vector<PolicyParam>& params,
                                              const std::string& file = "");
std::vector<std::string> LlmPolicySetNames();

}  // namespace sluice::core::llm

#endif  // SLUICE_CORE_LLM_LLM_POLICIES_H_
