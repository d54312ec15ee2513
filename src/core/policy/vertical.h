// VerticalController: each period, how much of one GPU each co-located instance may use.
// One object per GPU. Tokens are kernel thread blocks (Dilu): `max_tokens` is what the whole GPU
// executes in one period. Implemented by the static share baselines (core/baselines) and Dilu's
// fast scale-up/down controller (core/dilu); driven every period by the simulator and by the
// node agent's token server, with the same inputs. Not thread-safe.
#ifndef SLUICE_CORE_POLICY_VERTICAL_H_
#define SLUICE_CORE_POLICY_VERTICAL_H_

#include <cstdint>
#include <span>
#include <string_view>

#include "absl/time/time.h"

#include "core/resource/cluster.h"

namespace sluice::core {

// What the controller learns about one instance at the end of a period.
struct InstanceActivity {
  InstanceId instance;
  SmQuota quota;
  bool slo_sensitive = true;    // inference: true; training / best effort: false
  bool llm = false;             // LLM instances use a tighter violation threshold
  int64_t blocks_launched = 0;  // kernel blocks launched in the period that just ended
  // Iterations (inference batches / training steps) that ended in the period; -1 = unknown.
  // Dilu's KLC is the kernel launch cycle *within an iteration*: when known, controllers measure
  // it between iteration ends instead of guessing it from runs of busy periods.
  int64_t cycles_completed = -1;
};

class VerticalController {
 public:
  virtual ~VerticalController() = default;
  virtual std::string_view name() const = 0;
  // Period between Issue() calls; InfiniteDuration for static shares that never change.
  virtual absl::Duration period() const = 0;
  // Called once per period with every instance on the GPU (order is stable between calls;
  // instances may come and go). Writes each instance's token budget for the next period into
  // `tokens_out` (same order, same size). `max_tokens` = blocks the GPU runs in one period.
  virtual void Issue(absl::Time now, int64_t max_tokens,
                     std::span<const InstanceActivity> instances,
                     std::span<int64_t> tokens_out) = 0;
  // Forget an instance's history (it left the GPU).
  virtual void Forget(InstanceId instance) {}
  // The controller's GPU-wide state for logs and metrics ("NONE" for stateless controllers;
  // Dilu: NONE, EMERGENCY, RECOVERY or CONTENTION).
  virtual std::string_view state_name() const { return "NONE"; }
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_POLICY_VERTICAL_H_
