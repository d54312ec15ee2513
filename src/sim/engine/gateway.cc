// Least-loaded dispatch over an ordered set of (load, instance): O(log n) per load change, and
// ties go to the lowest instance index so runs are deterministic.
#include "sim/engine/gateway.h"

#include "common/status.h"

namespace sluice::sim {

void Gateway::UpdateLoad(int32_t instance, int64_t old_load, int64_t new_load) {
  if (old_load == new_load) return;
  const size_t erased = by_load_.erase({old_load, instance});
  SLUICE_CHECK(erased == 1);
  by_load_.insert({new_load, instance});
}

std::optional<int32_t> Gateway::LeastLoaded() const {
  if (by_load_.empty()) return std::nullopt;
  return by_load_.begin()->second;
}

absl::Time BatchDueAt(absl::Time now, int64_t queued, absl::Time oldest, int max_batch,
                      absl::Duration max_delay) {
  if (queued >= max_batch) return now;
  const absl::Time due = oldest + max_delay;
  return due <= now ? now : due;
}

}  // namespace sluice::sim
