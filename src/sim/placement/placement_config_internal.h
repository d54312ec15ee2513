// Policy-side sections of the placement experiment file (policies, the sensitivity sweep and the
// paper block), split from placement_config.cc. Internal to src/sim/placement. Stateless;
// thread-compatible like the loader.
#ifndef SLUICE_SIM_PLACEMENT_PLACEMENT_CONFIG_INTERNAL_H_
#define SLUICE_SIM_PLACEMENT_PLACEMENT_CONFIG_INTERNAL_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "sim/experiment/yaml_fields.h"
#include "sim/placement/placement_config.h"

namespace sluice::sim::internal {

// `policies:`, each built once through core::MakePolicySet; labels unique.
absl::StatusOr<std::vector<PlacementPolicyConfig>> ParsePolicies(const StrictMap& top);
// `sensitivity:` (optional): appends one policy per value to `policies`.
[[nodiscard]] absl::Status ParseSensitivity(const StrictMap& top,
                                            std::vector<PlacementPolicyConfig>& policies);
// `paper:` (optional); needs c.instances and c.policies parsed.
[[nodiscard]] absl::Status ParsePaper(const StrictMap& top, PlacementExperimentConfig& c);

}  // namespace sluice::sim::internal

#endif  // SLUICE_SIM_PLACEMENT_PLACEMENT_CONFIG_INTERNAL_H_
