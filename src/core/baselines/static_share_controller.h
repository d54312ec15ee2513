// StaticShareController: the vertical "controller" of static partitions (Exclusive, MPS-l,
// MPS-r): every instance may run its quota's limit of the GPU, always. It never needs a period
// (period() is InfiniteDuration); Issue() still answers for callers that ask once. One object per
// GPU; stateless, so thread-compatible.
#ifndef SLUICE_CORE_BASELINES_STATIC_SHARE_CONTROLLER_H_
#define SLUICE_CORE_BASELINES_STATIC_SHARE_CONTROLLER_H_

#include "core/policy/vertical.h"

namespace sluice::core {

class StaticShareController : public VerticalController {
 public:
  std::string_view name() const override { return "static-share"; }
  absl::Duration period() const override { return absl::InfiniteDuration(); }
  // tokens_out[i] = floor(max_tokens * instances[i].quota.limit), limit clamped to [0, 1].
  // Precondition: tokens_out.size() == instances.size().
  void Issue(absl::Time now, int64_t max_tokens, std::span<const InstanceActivity> instances,
             std::span<int64_t> tokens_out) override;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_BASELINES_STATIC_SHARE_CONTROLLER_H_
