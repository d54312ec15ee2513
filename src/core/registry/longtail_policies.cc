// The per-request policy set. Params are validated here, once; the parts' factories then cannot
// fail.
#include "core/registry/longtail_policies.h"

#include <tuple>

#include "common/status.h"
#include "core/baselines/exclusive_placement.h"
#include "core/baselines/per_request_scaler.h"
#include "core/baselines/static_share_controller.h"
#include "core/baselines/static_share_placement.h"
#include "core/registry/composed_policy_set.h"

namespace sluice::core {
namespace {

enum class Share { kRequest, kLimit, kWhole };

SmQuota QuotaOf(Share share, const FunctionTraits& f) {
  switch (share) {
    case Share::kWhole:
      return {1.0, 1.0, 1.0};
    case Share::kLimit:
      return {f.profiled.limit, f.profiled.limit, 1.0};
    case Share::kRequest:
      return {f.profiled.request, f.profiled.request, 1.0};
  }
  return f.profiled;
}

// One request's service time at the instance's share (Little's law for the sample's load).
absl::Duration RequestLatency(const FunctionTraits& f, const SmQuota& q) {
  if (f.latency != nullptr && q.request > 0)
    return f.latency->BatchLatency(1, q.request, q.time_quota);
  if (f.capacity_rps > 0)
    return absl::Seconds(1) / f.capacity_rps;
  return absl::Milliseconds(100);
}

std::unique_ptr<PlacementPolicy> PlacementFor(Share share, NodeOrder order) {
  if (share == Share::kWhole)
    return std::make_unique<ExclusivePlacement>(order);
  const bool limit = share == Share::kLimit;
  return std::make_unique<StaticSharePlacement>(StaticSharePlacement::Options{
      "per-request", limit ? ShareBasis::kLimit : ShareBasis::kRequest, order});
}

}  // namespace

absl::StatusOr<std::unique_ptr<PolicySet>> MakePerRequestPolicySet(
    std::span<const PolicyParam> params, const std::string& file) {
  ParamReader r("per-request", params, file);
  PerRequestConfig base;
  SLUICE_ASSIGN_OR_RETURN(base.keep_alive, r.Seconds("keep_alive_s", absl::Minutes(10), 0, 1e9));
  SLUICE_ASSIGN_OR_RETURN(const int64_t min, r.Int("min_instances", 0, 0, 1 << 20));
  base.min_instances = static_cast<int>(min);
  SLUICE_ASSIGN_OR_RETURN(const std::string share_name,
                          r.Choice("share", "request", {"request", "limit", "whole"}));
  SLUICE_ASSIGN_OR_RETURN(const NodeOrder order, ReadNodeOrder(r));
  SLUICE_RETURN_IF_ERROR(r.Finish());
  const Share share = share_name == "whole"   ? Share::kWhole
                      : share_name == "limit" ? Share::kLimit
                                              : Share::kRequest;
  PolicyParts parts;
  parts.name = "per-request";
  parts.placement = PlacementFor(share, order);
  parts.quota = [share](const FunctionTraits& f) { return QuotaOf(share, f); };
  parts.scaler = [base, share](const FunctionTraits& f) -> std::unique_ptr<HorizontalScaler> {
    PerRequestConfig c = base;
    c.request_latency = RequestLatency(f, QuotaOf(share, f));
    std::tie(c.min_instances, c.max_instances) = ScalerBounds(f, base.min_instances);
    absl::StatusOr<std::unique_ptr<PerRequestScaler>> s = PerRequestScaler::Create(c);
    SLUICE_CHECK_MSG(s.ok(), s.status().ToString());
    return std::move(*s);
  };
  parts.controller = [](GpuId) -> std::unique_ptr<VerticalController> {
    return std::make_unique<StaticShareController>();
  };
  parts.work_conserving = false;
  return std::unique_ptr<PolicySet>(new ComposedPolicySet(std::move(parts)));
}

}  // namespace sluice::core
