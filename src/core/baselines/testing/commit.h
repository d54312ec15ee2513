// Test and benchmark helpers: commit a placement decision to ClusterState and notify the policy,
// the way the simulator does. Header-only; not thread-safe.
#ifndef SLUICE_CORE_BASELINES_TESTING_COMMIT_H_
#define SLUICE_CORE_BASELINES_TESTING_COMMIT_H_

#include <vector>

#include "absl/status/status.h"

#include "common/status.h"
#include "core/policy/placement.h"

namespace sluice::core {

// Places `d` with `policy`, adds one allocation per chosen GPU (memory_per_gpu, `quota`) and
// reports each through OnAdded. Returns the GPUs.
inline absl::StatusOr<std::vector<GpuId>> PlaceAndCommit(PlacementPolicy& policy,
                                                         ClusterState& state,
                                                         const InstanceDemand& d) {
  SLUICE_ASSIGN_OR_RETURN(std::vector<GpuId> gpus, policy.Place(d, state));
  for (GpuId g : gpus) {
    const Allocation a{d.instance, d.function, g, d.memory_per_gpu, d.quota};
    SLUICE_RETURN_IF_ERROR(state.Add(a));
    policy.OnAdded(a, state);
  }
  return gpus;
}

// Releases `instance` and reports each allocation through OnRemoved.
inline void RemoveAndNotify(PlacementPolicy& policy, ClusterState& state, InstanceId instance) {
  for (const Allocation& a : state.Remove(instance))
    policy.OnRemoved(a, state);
}

}  // namespace sluice::core

#endif  // SLUICE_CORE_BASELINES_TESTING_COMMIT_H_
