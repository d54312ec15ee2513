// Dynamic batching rule shared by the simulator's engine and the runtime gateway: when does a
// function's (or an instance's) queue start its next batch. Pure: time comes in as arguments.
// Thread-safe: stateless.
#ifndef SLUICE_CORE_SERVING_BATCHING_H_
#define SLUICE_CORE_SERVING_BATCHING_H_

#include <cstdint>

#include "absl/time/time.h"

namespace sluice::core {

// When a queue with `queued` >= 1 waiting requests, the oldest of which arrived at `oldest`,
// starts its next batch: `now` if `queued` >= `max_batch` or the oldest has waited `max_delay`
// (batch start is due), else oldest + max_delay (check again then). Precondition: max_batch >= 1.
absl::Time BatchDueAt(absl::Time now, int64_t queued, absl::Time oldest, int max_batch,
                      absl::Duration max_delay);

}  // namespace sluice::core

#endif  // SLUICE_CORE_SERVING_BATCHING_H_
