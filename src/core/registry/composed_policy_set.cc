// ComposedPolicySet helpers.
#include "core/registry/composed_policy_set.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

#include "common/status.h"

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

absl::StatusOr<NodeOrder> ReadNodeOrder(ParamReader& reader) {
  SLUICE_ASSIGN_OR_RETURN(
      const std::string order,
      reader.Choice("node_order", "most_allocated", {"most_allocated", "least_allocated"}));
  return ParseNodeOrder(order);
}

}  // namespace sluice::core
