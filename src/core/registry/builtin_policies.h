// The static-allocation policy sets the registry knows from the start: "exclusive" (whole GPUs),
// "mps-l" (static share = profiled limit) and "mps-r" (static share = profiled request), each
// with the reactive keep-alive scaler and the static share controller (core/baselines).
// Factories only; policy_registry.cc registers them. Not thread-safe (PolicySet objects are
// owned by one loop).
#ifndef SLUICE_CORE_REGISTRY_BUILTIN_POLICIES_H_
#define SLUICE_CORE_REGISTRY_BUILTIN_POLICIES_H_

#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"

#include "core/registry/policy_registry.h"

namespace sluice::core {

// Params (all optional):
//   keep_alive_s   seconds an unneeded instance stays warm before scale-in   (default 60, >= 0)
//   queue_drain_s  queued requests should drain within this many seconds    (default 1, > 0)
//   node_order     most_allocated | least_allocated: which node gets whole GPUs
//                  (default most_allocated: bin packing; see core/baselines/idle_gpu_index.h)
absl::StatusOr<std::unique_ptr<PolicySet>> MakeExclusivePolicySet(
    std::span<const PolicyParam> params, const std::string& file);
absl::StatusOr<std::unique_ptr<PolicySet>> MakeMpsLimitPolicySet(
    std::span<const PolicyParam> params, const std::string& file);
absl::StatusOr<std::unique_ptr<PolicySet>> MakeMpsRequestPolicySet(
    std::span<const PolicyParam> params, const std::string& file);

}  // namespace sluice::core

#endif  // SLUICE_CORE_REGISTRY_BUILTIN_POLICIES_H_
