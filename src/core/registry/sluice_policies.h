// The "sluice" registry entry (issue 13 item 6): Sluice's own policy set. Dilu's parts for busy
// functions (profiled elastic <request, limit> quota, a Dilu vertical controller per GPU,
// work-conserving, the lazy scaler's scale-out) plus what wins on the long tail: memory-only
// parking of idle instances packed by memory (core/longtail/parked_packing.h), keep-alive and
// pre-warming from a per-function idle-time histogram, demotion to the host cache, host-cache
// cold starts with a pre-started process pool and wake from zero on the first request
// (core/longtail/tail_scaler.h). Factory only; policy_registry.cc registers it. The PolicySet is
// owned by one loop (not thread-safe).
#ifndef SLUICE_CORE_REGISTRY_SLUICE_POLICIES_H_
#define SLUICE_CORE_REGISTRY_SLUICE_POLICIES_H_

#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"

#include "core/registry/policy_registry.h"

namespace sluice::core {

// Params (all optional; defaults in brackets). Sluice's own:
//   park_after_s        >= 0   no arrival for this long: instances park (memory only)    [10]
//   keep_alive_s        >= 0   resident after the last arrival when the histogram is not
//                              representative; then demoted to the host cache              [300]
//   slow_keep_alive_s   >= 0   the same for functions whose cached cold start would miss
//                              cold_slo_fraction x SLO                                     [86400]
//   cold_slo_fraction   (0, 10] see above                                                  [0.8]
//   prewarm             bool   keep-alive / pre-warm windows from the idle-time histogram  [true]
//   histogram_bin_s     > 0    its bin width (ATC'20: 1 minute)                            [60]
//   histogram_bins      >= 1   its bins (ATC'20: 4 hours)                                  [240]
//   min_instances       >= 0   instances kept whatever the load                            [0]
//   memory_packing      bool   parked instances packed by memory (false: Dilu places all)  [true]
//   prestarted_pool     bool   no process start on a cold start's critical path            [true]
//   wake_from_zero      bool   the first request of a scaled-to-zero function starts one   [true]
//   unpark_ms           >= 0   a parked instance's share is back after this       [Dilu period_ms]
// Every other key is Dilu's (core/dilu/dilu_policy.h: scheduler, vertical, horizontal window /
// phi_out / phi_in / max_instances, the ablation switches), with Dilu's defaults.
absl::StatusOr<std::unique_ptr<PolicySet>> MakeSluicePolicySet(std::span<const PolicyParam> params,
                                                               const std::string& file);

}  // namespace sluice::core

#endif  // SLUICE_CORE_REGISTRY_SLUICE_POLICIES_H_
