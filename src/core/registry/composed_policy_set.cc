// ComposedPolicySet helpers.
#include "core/registry/composed_policy_set.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

#include "common/status.h"
#include "core/baselines/reactive_scaler.h"

namespace sluice::core {

std::pair<int, int> ScalerBounds(const FunctionTraits& f, int policy_min) {
  const int lo = std::max({0, f.min_instances, policy_min});
  return {lo, std::max(lo, f.max_instances)};
}

int LineOf(std::span<const PolicyParam> params, absl::string_view key) {
  for (const PolicyParam& p : params) {
    if (p.key == key)
      return p.line;
  }
  return 0;
}

absl::Status ComboError(std::span<const PolicyParam> params, const std::string& file,
                        absl::string_view policy, std::initializer_list<absl::string_view> keys,
                        absl::string_view message) {
  absl::string_view key = *keys.begin();
  for (absl::string_view k : keys) {
    if (LineOf(params, k) != 0) {
      key = k;
      break;
    }
  }
  return common::InputError({file, LineOf(params, key)}, key,
                            absl::StrCat("policy '", policy, "': ", message));
}

std::unique_ptr<HorizontalScaler> MakeReactiveScaler(const FunctionTraits& f,
                                                     absl::Duration keep_alive,
                                                     absl::Duration queue_drain, int policy_min,
                                                     double capacity_rps) {
  ReactiveScalerConfig cfg;
  std::tie(cfg.min_instances, cfg.max_instances) = ScalerBounds(f, policy_min);
  cfg.keep_alive = keep_alive;
  cfg.queue_drain = queue_drain;
  cfg.capacity_rps = capacity_rps;
  absl::StatusOr<std::unique_ptr<ReactiveScaler>> s = ReactiveScaler::Create(cfg);
  SLUICE_CHECK_MSG(s.ok(), s.status().ToString());
  return std::move(*s);
}

absl::StatusOr<NodeOrder> ReadNodeOrder(ParamReader& reader) {
  SLUICE_ASSIGN_OR_RETURN(
      const std::string order,
      reader.Choice("node_order", "most_allocated", {"most_allocated", "least_allocated"}));
  return ParseNodeOrder(order);
}

}  // namespace sluice::core
