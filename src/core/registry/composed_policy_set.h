// ComposedPolicySet: a PolicySet assembled from parts (a placement policy, a quota rule, a
// scaler factory, a controller factory, a work-conserving flag), so each registry factory only
// parses its params and picks its parts. Used by the baseline and Dilu policy sets of
// core/registry. Not thread-safe (owned by one loop, like every PolicySet).
#ifndef SLUICE_CORE_REGISTRY_COMPOSED_POLICY_SET_H_
#define SLUICE_CORE_REGISTRY_COMPOSED_POLICY_SET_H_

#include <functional>
#include <initializer_list>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "core/baselines/idle_gpu_index.h"
#include "core/policy/policy_params.h"
#include "core/registry/param_reader.h"
#include "core/registry/policy_registry.h"

namespace sluice::core {

struct PolicyParts {
  std::string name;
  std::unique_ptr<PlacementPolicy> placement;
  std::function<SmQuota(const FunctionTraits&)> quota;
  // Must not fail: the factory validated its params before building the parts.
  std::function<std::unique_ptr<HorizontalScaler>(const FunctionTraits&)> scaler;
  std::function<std::unique_ptr<VerticalController>(GpuId)> controller;
  bool work_conserving = false;
  // Optional (policies with a hybrid scaler, e.g. has-gpu); empty: none.
  std::function<std::unique_ptr<HybridScaler>(const FunctionTraits&)> hybrid;
  StartTraits start;  // issue 13: how instances start and wake (default: container path)
};

class ComposedPolicySet final : public PolicySet {
 public:
  // Precondition: every part is set.
  explicit ComposedPolicySet(PolicyParts parts) : parts_(std::move(parts)) {}

  std::string_view name() const override { return parts_.name; }
  PlacementPolicy& placement() override { return *parts_.placement; }
  SmQuota QuotaFor(const FunctionTraits& f) const override { return parts_.quota(f); }
  std::unique_ptr<HorizontalScaler> MakeScaler(const FunctionTraits& f) const override {
    return parts_.scaler(f);
  }
  std::unique_ptr<VerticalController> MakeVerticalController(GpuId gpu) const override {
    return parts_.controller(gpu);
  }
  bool work_conserving() const override { return parts_.work_conserving; }
  std::unique_ptr<HybridScaler> MakeHybridScaler(const FunctionTraits& f) const override {
    return parts_.hybrid ? parts_.hybrid(f) : nullptr;
  }
  StartTraits start_traits() const override { return parts_.start; }

 private:
  PolicyParts parts_;
};

// Scaler bounds for a function: [max(0, traits min, policy_min), max(that, traits max)], so
// scaler creation cannot fail on odd traits.
std::pair<int, int> ScalerBounds(const FunctionTraits& f, int policy_min = 0);

// A ReactiveScaler for `f` over validated settings (the registry's sets that scale reactively:
// fast-gs+, tgs, fast-gshare, has-gpu's training fallback), sized on `capacity_rps` per instance.
std::unique_ptr<HorizontalScaler> MakeReactiveScaler(const FunctionTraits& f,
                                                     absl::Duration keep_alive,
                                                     absl::Duration queue_drain, int policy_min,
                                                     double capacity_rps);

// The line of the first param named `key` (0 when absent).
int LineOf(std::span<const PolicyParam> params, absl::string_view key);
// InvalidArgument for a combination of params ParamReader cannot judge one key at a time: names
// `file`, the first of `keys` that is present (its line) and "policy '<policy>': <message>".
[[nodiscard]] absl::Status ComboError(std::span<const PolicyParam> params, const std::string& file,
                                      absl::string_view policy,
                                      std::initializer_list<absl::string_view> keys,
                                      absl::string_view message);

// The `node_order` param (most_allocated | least_allocated, default most_allocated).
absl::StatusOr<NodeOrder> ReadNodeOrder(ParamReader& reader);

}  // namespace sluice::core

#endif  // SLUICE_CORE_REGISTRY_COMPOSED_POLICY_SET_H_
