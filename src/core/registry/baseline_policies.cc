// fast-gs+ and tgs policy sets (infless* live in infless_policies.cc). Params are validated
// here, once; the parts' factories then cannot fail.
#include "core/registry/baseline_policies.h"

#include <algorithm>
#include <cmath>
#include <tuple>

#include "common/status.h"
#include "core/baselines/function_tracking_placement.h"
#include "core/baselines/priority_rate_controller.h"
#include "core/baselines/reactive_scaler.h"
#include "core/baselines/static_share_controller.h"
#include "core/baselines/static_share_placement.h"
#include "core/registry/composed_policy_set.h"

namespace sluice::core {
namespace {

// A ReactiveScaler factory over validated settings, sized on the profiled capacity.
std::function<std::unique_ptr<HorizontalScaler>(const FunctionTraits&)> ReactiveFactory(
    absl::Duration keep_alive, absl::Duration queue_drain, int policy_min) {
  return [=](const FunctionTraits& f) {
    return MakeReactiveScaler(f, keep_alive, queue_drain, policy_min, f.capacity_rps);
  };
}

// The controller's keys, each within its own range (combinations are checked by the caller).
absl::StatusOr<PriorityRateConfig> ReadTgsController(ParamReader& r) {
  PriorityRateConfig c;
  SLUICE_ASSIGN_OR_RETURN(const double period_ms, r.Double("period_ms", 5, 1e-3, 1e6));
  c.period = absl::Microseconds(std::llround(period_ms * 1000));
  SLUICE_ASSIGN_OR_RETURN(c.initial_rate, r.Double("initial_rate", c.initial_rate, 0, 1));
  SLUICE_ASSIGN_OR_RETURN(c.floor, r.Double("floor", c.floor, 1e-6, 1));
  SLUICE_ASSIGN_OR_RETURN(c.increase_step, r.Double("increase_step", c.increase_step, 0, 1));
  SLUICE_ASSIGN_OR_RETURN(c.backoff, r.Double("backoff", c.backoff, 1e-6, 1 - 1e-6));
  SLUICE_ASSIGN_OR_RETURN(c.tolerance, r.Double("tolerance", c.tolerance, 0, 1 - 1e-6));
  SLUICE_ASSIGN_OR_RETURN(c.reference_decay,
                          r.Double("reference_decay", c.reference_decay, 0, 1 - 1e-6));
  return c;
}

}  // namespace

absl::StatusOr<std::unique_ptr<PolicySet>> MakeFastGsPolicySet(std::span<const PolicyParam> params,
                                                               const std::string& file) {
  ParamReader r("fast-gs+", params, file);
  SLUICE_ASSIGN_OR_RETURN(const double time_quota, r.Double("time_quota", 1.0, 1e-6, 1.0));
  SLUICE_ASSIGN_OR_RETURN(const absl::Duration keep_alive,
                          r.Seconds("keep_alive_s", absl::Seconds(10), 0, 1e9));
  SLUICE_ASSIGN_OR_RETURN(const int64_t min_instances, r.Int("min_instances", 1, 0, 1 << 20));
  SLUICE_ASSIGN_OR_RETURN(const absl::Duration drain,
                          r.Seconds("queue_drain_s", absl::Seconds(1), 1e-6, 1e9));
  SLUICE_ASSIGN_OR_RETURN(const NodeOrder order, ReadNodeOrder(r));
  SLUICE_RETURN_IF_ERROR(r.Finish());

  PolicyParts parts;
  parts.name = "fast-gs+";
  parts.placement = std::make_unique<StaticSharePlacement>(
      StaticSharePlacement::Options{"fast-gs+", ShareBasis::kLimit, order});
  parts.quota = [time_quota](const FunctionTraits& f) {
    const double share = f.kind == FunctionKind::kTraining
                             ? f.profiled.limit
                             : std::max(1e-6, f.profiled.limit * time_quota);
    return SmQuota{share, share};
  };
  parts.scaler = ReactiveFactory(keep_alive, drain, static_cast<int>(min_instances));
  parts.controller = [](GpuId) {
    return std::make_unique<StaticShareController>();
  };
  parts.work_conserving = false;
  return std::unique_ptr<PolicySet>(new ComposedPolicySet(std::move(parts)));
}

absl::StatusOr<std::unique_ptr<PolicySet>> MakeTgsPolicySet(std::span<const PolicyParam> params,
                                                            const std::string& file) {
  ParamReader r("tgs", params, file);
  SLUICE_ASSIGN_OR_RETURN(const PriorityRateConfig c, ReadTgsController(r));
  SLUICE_ASSIGN_OR_RETURN(const absl::Duration keep_alive,
                          r.Seconds("keep_alive_s", absl::Seconds(60), 0, 1e9));
  SLUICE_ASSIGN_OR_RETURN(const absl::Duration drain,
                          r.Seconds("queue_drain_s", absl::Seconds(1), 1e-6, 1e9));
  SLUICE_ASSIGN_OR_RETURN(const NodeOrder order, ReadNodeOrder(r));
  SLUICE_RETURN_IF_ERROR(r.Finish());
  if (absl::Status s = PriorityRateController::Create(c).status(); !s.ok()) {
    // The only combination left to fail: floor above initial_rate.
    return ComboError(params, file, "tgs", {"floor", "initial_rate"}, s.message());
  }

  PolicyParts parts;
  parts.name = "tgs";
  auto tracking =
      std::make_unique<FunctionTrackingPlacement>(std::make_unique<StaticSharePlacement>(
          StaticSharePlacement::Options{"tgs", ShareBasis::kRequest, order}));
  // Controllers borrow the placement's instance -> function map: both belong to this set, and the
  // callers (simulator, node agent) drop the controllers before the set.
  const FunctionTrackingPlacement* functions = tracking.get();
  parts.placement = std::move(tracking);
  parts.quota = [](const FunctionTraits& f) {
    return SmQuota{f.profiled.request, 1.0};
  };
  parts.scaler = ReactiveFactory(keep_alive, drain, 0);
  parts.controller = [c, functions](GpuId) -> std::unique_ptr<VerticalController> {
    absl::StatusOr<std::unique_ptr<PriorityRateController>> ctl = PriorityRateController::Create(
        c, [functions](InstanceId i) { return functions->FunctionOf(i); });
    SLUICE_CHECK_MSG(ctl.ok(), ctl.status().ToString());
    return std::move(*ctl);
  };
  parts.work_conserving = true;
  return std::unique_ptr<PolicySet>(new ComposedPolicySet(std::move(parts)));
}

}  // namespace sluice::core
