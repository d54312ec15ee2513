// The "dilu" registry entry: Dilu (ASPLOS'25) as a PolicySet wrapping core/dilu's
// DiluComponents: the resourcing-complementary scheduler as placement, the profiled elastic
// <request, limit> as quota, a LazyScaler per function, a Dilu vertical controller per GPU,
// work-conserving. The ablation switches resource_complementarity / workload_affinity /
// vertical_scaling (all default true) and every other knob are DiluConfig's params (see
// core/dilu/dilu_policy.h for keys and defaults). Factory only; policy_registry.cc registers it.
// The PolicySet is owned by one loop (not thread-safe).
#ifndef SLUICE_CORE_REGISTRY_DILU_POLICY_SET_H_
#define SLUICE_CORE_REGISTRY_DILU_POLICY_SET_H_

#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"

#include "core/registry/policy_registry.h"

namespace sluice::core {

absl::StatusOr<std::unique_ptr<PolicySet>> MakeDiluPolicySet(std::span<const PolicyParam> params,
                                                             const std::string& file);

}  // namespace sluice::core

#endif  // SLUICE_CORE_REGISTRY_DILU_POLICY_SET_H_
