// Dilu policy set over DiluComponents (validated once; its factories cannot fail).
#include "core/registry/dilu_policy_set.h"

#include "common/status.h"
#include "core/dilu/dilu_policy.h"
#include "core/registry/composed_policy_set.h"

namespace sluice::core {

absl::StatusOr<std::unique_ptr<PolicySet>> MakeDiluPolicySet(std::span<const PolicyParam> params,
                                                             const std::string& file) {
  SLUICE_ASSIGN_OR_RETURN(DiluComponents dilu, MakeDiluComponents(params, file));
  // One immutable copy, owned jointly by the quota, scaler and controller factories below.
  const auto shared = std::make_shared<const DiluComponents>(std::move(dilu));
  PolicyParts parts;
  parts.name = "dilu";
  parts.placement = shared->MakeScheduler();
  parts.quota = [shared](const FunctionTraits& f) {
    return shared->QuotaFor(f.profiled);
  };
  parts.scaler = [shared](const FunctionTraits& f) {
    return shared->MakeScaler(f.capacity_rps, f.min_instances, f.max_instances);
  };
  parts.controller = [shared](GpuId) {
    return shared->MakeController();
  };
  parts.work_conserving = shared->work_conserving();
  return std::unique_ptr<PolicySet>(new ComposedPolicySet(std::move(parts)));
}

}  // namespace sluice::core
