// Static policy sets. One class serves all three: they differ only in the placement and in the
// quota rule.
#include "core/registry/builtin_policies.h"

#include <algorithm>

#include "common/status.h"
#include "core/baselines/exclusive_placement.h"
#include "core/baselines/reactive_scaler.h"
#include "core/registry/composed_policy_set.h"
#include "core/baselines/static_share_controller.h"
#include "core/baselines/static_share_placement.h"
#include "core/registry/param_reader.h"

namespace sluice::core {
namespace {

enum class StaticKind { kExclusive, kMpsLimit, kMpsRequest };

struct StaticParams {
  absl::Duration keep_alive;
  absl::Duration queue_drain;
  NodeOrder node_order = NodeOrder::kMostAllocated;
};

class StaticPolicySet : public PolicySet {
 public:
  StaticPolicySet(StaticKind kind, const StaticParams& params) : kind_(kind), params_(params) {
    if (kind == StaticKind::kExclusive) {
      placement_ = std::make_unique<ExclusivePlacement>(params.node_order);
    } else {
      const bool limit = kind == StaticKind::kMpsLimit;
      placement_ = std::make_unique<StaticSharePlacement>(StaticSharePlacement::Options{
          limit ? "mps-l" : "mps-r", limit ? ShareBasis::kLimit : ShareBasis::kRequest,
          params.node_order});
    }
  }

  std::string_view name() const override { return placement_->name(); }
  PlacementPolicy& placement() override { return *placement_; }

  SmQuota QuotaFor(const FunctionTraits& f) const override {
    switch (kind_) {
      case StaticKind::kExclusive:
        return {1.0, 1.0};
      case StaticKind::kMpsLimit:
        return {f.profiled.limit, f.profiled.limit};
      case StaticKind::kMpsRequest:
        return {f.profiled.request, f.profiled.request};
    }
    return f.profiled;
  }

  // Traits with min > max (or negative) are clamped so that scaler creation cannot fail.
  std::unique_ptr<HorizontalScaler> MakeScaler(const FunctionTraits& f) const override {
    return MakeReactiveScaler(f, params_.keep_alive, params_.queue_drain, 0, f.capacity_rps);
  }

  std::unique_ptr<VerticalController> MakeVerticalController(GpuId) const override {
    return std::make_unique<StaticShareController>();
  }

  // Exclusive instances are alone on their GPU; MPS partitions are static.
  bool work_conserving() const override { return false; }

 private:
  StaticKind kind_;
  StaticParams params_;
  std::unique_ptr<PlacementPolicy> placement_;
};

absl::StatusOr<std::unique_ptr<PolicySet>> Make(StaticKind kind, absl::string_view name,
                                                std::span<const PolicyParam> params,
                                                const std::string& file) {
  ParamReader r(name, params, file);
  StaticParams p;
  SLUICE_ASSIGN_OR_RETURN(p.keep_alive, r.Seconds("keep_alive_s", absl::Seconds(60), 0, 1e9));
  SLUICE_ASSIGN_OR_RETURN(p.queue_drain, r.Seconds("queue_drain_s", absl::Seconds(1), 1e-6, 1e9));
  SLUICE_ASSIGN_OR_RETURN(const std::string order, r.Choice("node_order", "most_allocated",
                                                            {"most_allocated", "least_allocated"}));
  SLUICE_ASSIGN_OR_RETURN(p.node_order, ParseNodeOrder(order));
  SLUICE_RETURN_IF_ERROR(r.Finish());
  return std::unique_ptr<PolicySet>(new StaticPolicySet(kind, p));
}

}  // namespace

absl::StatusOr<std::unique_ptr<PolicySet>> MakeExclusivePolicySet(
    std::span<const PolicyParam> params, const std::string& file) {
  return Make(StaticKind::kExclusive, "exclusive", params, file);
}

absl::StatusOr<std::unique_ptr<PolicySet>> MakeMpsLimitPolicySet(
    std::span<const PolicyParam> params, const std::string& file) {
  return Make(StaticKind::kMpsLimit, "mps-l", params, file);
}

absl::StatusOr<std::unique_ptr<PolicySet>> MakeMpsRequestPolicySet(
    std::span<const PolicyParam> params, const std::string& file) {
  return Make(StaticKind::kMpsRequest, "mps-r", params, file);
}

}  // namespace sluice::core
