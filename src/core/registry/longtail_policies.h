// Issue 13's scalers users know, as registry factories: "per-request" (scale per request with a
// keep-alive, AWS Lambda / SimFaaS style; core/baselines/per_request_scaler.h). (Knative's KPA
// is the `kserve` set in hasgpu_policies.h.) Factories only; policy_registry.cc registers them.
// Each PolicySet is owned by one loop (not thread-safe).
#ifndef SLUICE_CORE_REGISTRY_LONGTAIL_POLICIES_H_
#define SLUICE_CORE_REGISTRY_LONGTAIL_POLICIES_H_

#include <memory>
#include <span>
#include <string>

#include "absl/status/statusor.h"

#include "core/registry/policy_registry.h"

namespace sluice::core {

// per-request: one request per instance, a new instance (cold start) when none is idle, an
// instance expires after keep_alive_s idle. Static shares (non-work-conserving, static share
// controller). Params (all optional):
//   keep_alive_s   >= 0    idle time before an instance expires (AWS Lambda: ~10 min)  [600]
//   min_instances  >= 0    instances kept whatever the load                           [0]
//   share          request | limit | whole: each instance's static SM share, the
//                  profiled request (packed like mps-r), the limit (mps-l) or a whole
//                  GPU (exclusive)                                                     [request]
//   node_order     most_allocated | least_allocated                                   [most_allocated]
// The scaler's concurrency between samples is rps x the function's batch-1 latency at that
// share (Little's law; 1 / capacity_rps, else 100 ms, without a latency model) + queued.
absl::StatusOr<std::unique_ptr<PolicySet>> MakePerRequestPolicySet(
    std::span<const PolicyParam> params, const std::string& file);

}  // namespace sluice::core

#endif  // SLUICE_CORE_REGISTRY_LONGTAIL_POLICIES_H_
