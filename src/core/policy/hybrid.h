// HybridScaler: a per-function autoscaler that decides both dimensions at once, vertical (change
// the quota of a running instance, e.g. HAS-GPU's time-quota steps) and horizontal (add an
// instance on a GPU and quota it chose, or remove one). HAS-GPU's Algorithm 1 is the first
// implementation (core/hasgpu). A PolicySet that has one returns it from MakeHybridScaler(); the
// simulator and the controller then drive it *instead of* HorizontalScaler + PlacementPolicy::Place
// for that function: every sampling interval they call Observe() with the load, then Decide() with
// the function's pods and the cluster, and apply the returned actions in order (committing each
// to ClusterState, which the scaler does not modify). Time comes in as an argument.
// Not thread-safe: one object per function, owned by one loop.
#ifndef SLUICE_CORE_POLICY_HYBRID_H_
#define SLUICE_CORE_POLICY_HYBRID_H_

#include <string_view>
#include <vector>

#include "absl/time/time.h"
#include "core/policy/horizontal.h"
#include "core/resource/cluster.h"

namespace sluice::core {

// One of the function's instances as the scaler sees it.
struct PodView {
  InstanceId instance;
  GpuId gpu;          // the (first) GPU it holds
  SmQuota quota;      // current <request, limit> and time quota
  int batch = 1;      // batch size it serves with
  bool warm = false;  // false while loading (counts towards capacity: it is coming)
};

// What the caller does with one decision. Actions are applied in the order returned.
struct ScalingAction {
  enum class Kind {
    kSetQuota,  // change `instance`'s quota to `quota` (ClusterState::UpdateQuota; the node's
                // token server / the simulator's share model apply it live, no restart)
    kAdd,       // start a new instance on `gpu` with `quota` and `batch` (a cold start)
    kRemove,    // drain and stop `instance`
  };
  Kind kind = Kind::kSetQuota;
  InstanceId instance;  // kSetQuota, kRemove
  GpuId gpu;            // kAdd
  SmQuota quota;        // kSetQuota, kAdd
  int batch = 1;        // kAdd
};

class HybridScaler {
 public:
  virtual ~HybridScaler() = default;
  virtual std::string_view name() const = 0;
  // One load observation (same sampling as HorizontalScaler).
  virtual void Observe(const LoadSample& sample) = 0;
  // Actions to take at `now` for the function whose instances are `pods` (every deployed one,
  // warm or loading; not draining), given the cluster as committed so far. May return nothing.
  // `state` is read-only: the caller commits each action (kAdd via ClusterState::Add, kSetQuota
  // via UpdateQuota, kRemove via Remove) and skips an action the cluster rejects. Actions never
  // name a GPU without room for the function's memory (memory comes from FunctionTraits).
  virtual std::vector<ScalingAction> Decide(absl::Time now, const std::vector<PodView>& pods,
                                            const ClusterState& state) = 0;
  // Next time Decide() may act without a new sample (cool-downs ending); InfiniteFuture when only
  // samples can change it.
  virtual absl::Time NextWakeup() const { return absl::InfiniteFuture(); }
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_POLICY_HYBRID_H_
