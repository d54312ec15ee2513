// Policy registry: builds a PolicySet (placement + quota rule + horizontal scaler + vertical
// controller) by name from its `key: value` params. Used by the simulator's experiment loader and
// the controller. Built-ins (RegisterAllPolicies): "exclusive", "mps-l", "mps-r" (static
// baselines), "fast-gs+", "infless+", "infless-l", "infless-r", "tgs" (the Dilu paper's
// baselines, baseline_policies.h), "dilu" (dilu_policy_set.h), and "kserve", "fast-gshare",
// "has-gpu" (the HAS-GPU paper's baselines and HAS-GPU itself, hasgpu_policies.h), "quart"
// (quart_policies.h) and the QUART paper's baselines "infless" (baseline_policies.h),
// "inferline", "cocktail" (pipeline_baseline_policies.h). They are registered on first
// use, inside a function-local static (no static initialisers), so callers need no set-up. Other
// modules may add entries with RegisterPolicy(), which is NOT thread-safe: call it at start-up, on
// one thread, before any MakePolicySet(); after that, lookups are read-only and may run
// concurrently. Factories parse their params with core/registry/param_reader.h.
#ifndef SLUICE_CORE_REGISTRY_POLICY_REGISTRY_H_
#define SLUICE_CORE_REGISTRY_POLICY_REGISTRY_H_

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

#include "absl/time/time.h"
#include "core/perf/perf_model.h"
#include "core/policy/horizontal.h"
#include "core/policy/hybrid.h"
#include "core/policy/pipeline.h"
#include "core/policy/placement.h"
#include "core/policy/policy_params.h"
#include "core/policy/vertical.h"
#include "core/resource/cluster.h"

namespace sluice::core {

// What a policy needs to know about a function to size and scale its instances.
struct FunctionTraits {
  FunctionId id;
  FunctionKind kind = FunctionKind::kInference;
  SmQuota profiled;  // profiled <request, limit>
  int min_instances = 0;
  int max_instances = 1 << 20;
  double capacity_rps = 0;    // profiled per-instance serving throughput (requests/s)
  bool slo_sensitive = true;  // inference true, training false
  // For policies that size instances themselves (HAS-GPU's hybrid scaler asks latency of
  // (batch, s, q)): the model's latency, the largest batch and the SLO. The latency model is
  // owned by the caller's PerfModel and outlives every policy object; null when unknown.
  const LatencyModel* latency = nullptr;
  int max_batch = 1;
  absl::Duration slo = absl::InfiniteDuration();
  Bytes memory;  // GPU memory of one instance
  // Issue 13: a cold start from the node's host cache with a pre-started process (parameters over
  // PCIe, no process start), as the caller models it; 0 when unknown.
  absl::Duration cached_start = absl::ZeroDuration();
};

// Issue 13: how a set's instances start and wake (defaults: the paper systems' container path).
struct StartTraits {
  // A pre-started runtime process takes each new instance: no process / container start on the
  // critical path of a cold start (the simulator's ColdStartConfig::pool_handoff instead).
  bool prestarted_pool = false;
  // The gateway asks for an instance on the first request of a function that has none, instead of
  // waiting for the scaler's next sample (the runtime gateway's wake from zero).
  bool wake_from_zero = false;
  // A parked instance (HorizontalScaler::ActiveWanted) has its SM share back this long after a
  // request reaches it: one token period of the vertical controller.
  absl::Duration unpark = absl::ZeroDuration();
};

// One named allocation scheme. Owns its placement policy (stateful: it may keep indices fed by
// OnAdded/OnRemoved), and makes per-function scalers and per-GPU vertical controllers.
class PolicySet {
 public:
  virtual ~PolicySet() = default;
  virtual std::string_view name() const = 0;
  virtual PlacementPolicy& placement() = 0;
  // Quota an instance of `f` receives: exclusive {1,1}; mps-l {limit,limit}; mps-r
  // {request,request}; elastic policies (Dilu): the profiled quota.
  virtual SmQuota QuotaFor(const FunctionTraits& f) const = 0;
  virtual std::unique_ptr<HorizontalScaler> MakeScaler(const FunctionTraits& f) const = 0;
  virtual std::unique_ptr<VerticalController> MakeVerticalController(GpuId gpu) const = 0;
  // A scaler that decides vertical and horizontal actions together (core/policy/hybrid.h); when
  // it returns non-null for `f`, the caller drives it instead of MakeScaler(f) + placement().
  // Default: none.
  virtual std::unique_ptr<HybridScaler> MakeHybridScaler(const FunctionTraits& f) const {
    return nullptr;
  }
  // A scaler for a whole pipeline (core/policy/pipeline.h); when it returns non-null, the
  // caller drives it for the pipeline's stages instead of MakeScaler() per stage. `stages` are
  // the stage functions' traits in order, `stage_traits` their pipeline-specific traits (same
  // length), `slo` the end-to-end latency objective. Default: none (stages scale on their own).
  virtual std::unique_ptr<PipelineScaler> MakePipelineScaler(
      const std::vector<FunctionTraits>& stages,
      const std::vector<PipelineStageTraits>& stage_traits, absl::Duration slo) const {
    return nullptr;
  }
  // True when idle SM capacity on a GPU flows to busy co-located instances up to their cap
  // (limit or token budget); false for static partitions (MPS), where each instance runs at its
  // quota.
  virtual bool work_conserving() const = 0;
  // Issue 13: how instances start and wake. Default: StartTraits{}.
  virtual StartTraits start_traits() const { return {}; }
};

// Builds a policy by registry name from its params. Unknown name -> InvalidArgument naming
// `file` and field 'policy' and listing the known names (the caller knows the name's line and
// may re-wrap); unknown key, repeated key or bad value -> InvalidArgument naming `file`, the
// param's line and key (via common::InputError). Each call returns a fresh, independent set.
absl::StatusOr<std::unique_ptr<PolicySet>> MakePolicySet(std::string_view name,
                                                         std::span<const PolicyParam> params,
                                                         const std::string& file);
// Registered names, sorted.
std::vector<std::string> KnownPolicies();

using PolicyFactory = std::function<absl::StatusOr<std::unique_ptr<PolicySet>>(
    std::span<const PolicyParam>, const std::string& file)>;
// Registers every built-in policy (above), replacing entries of the same names. Idempotent.
// MakePolicySet / KnownPolicies call it once on first use; the simulator and the runtime may also
// call it at start-up to make the moment explicit. Same threading rule as RegisterPolicy.
void RegisterAllPolicies();

// Adds (or replaces) a registry entry. Registration is by explicit call, never by static
// initialisers: call before use, single-threaded (see the file comment).
void RegisterPolicy(std::string name, PolicyFactory factory);

}  // namespace sluice::core

#endif  // SLUICE_CORE_REGISTRY_POLICY_REGISTRY_H_
