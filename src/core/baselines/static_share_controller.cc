// StaticShareController.
#include "core/baselines/static_share_controller.h"

#include <algorithm>
#include <cmath>

#include "common/status.h"

namespace sluice::core {

void StaticShareController::Issue(absl::Time now, int64_t max_tokens,
                                  std::span<const InstanceActivity> instances,
                                  std::span<int64_t> tokens_out) {
  SLUICE_CHECK(tokens_out.size() == instances.size());
  for (size_t i = 0; i < instances.size(); ++i) {
    const double limit = std::clamp(instances[i].quota.limit, 0.0, 1.0);
    // The 1e-9 keeps 100 * 0.29 (= 28.999999999999996) from losing a token.
    tokens_out[i] =
        static_cast<int64_t>(std::floor(static_cast<double>(max_tokens) * limit + 1e-9));
  }
}

}  // namespace sluice::core
