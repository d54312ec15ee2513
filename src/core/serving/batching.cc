// A batch is due when full or when its oldest request has waited the max queue delay.
#include "core/serving/batching.h"

namespace sluice::core {

absl::Time BatchDueAt(absl::Time now, int64_t queued, absl::Time oldest, int max_batch,
                      absl::Duration max_delay) {
  if (queued >= max_batch)
    return now;
  const absl::Time due = oldest + max_delay;
  return due <= now ? now : due;
}

}  // namespace sluice::core
