// Gateway of one function in the simulator: holds requests while no instance of the function is
// warm, picks the least-loaded warm instance for each request, and decides when a free instance
// starts its next batch (max batch size, max queue delay). Used by the engine; not thread-safe.
#ifndef SLUICE_SIM_ENGINE_GATEWAY_H_
#define SLUICE_SIM_ENGINE_GATEWAY_H_

#include <cstdint>
#include <deque>
#include <optional>
#include <utility>

#include "absl/container/btree_set.h"
#include "absl/time/time.h"
#include "sim/engine/instance.h"

namespace sluice::sim {

class Gateway {
 public:
  // Warm instances eligible for dispatch, with their load (requests outstanding on them).
  void AddWarm(int32_t instance, int64_t load) { by_load_.insert({load, instance}); }
  void RemoveWarm(int32_t instance, int64_t load) { by_load_.erase({load, instance}); }
  void UpdateLoad(int32_t instance, int64_t old_load, int64_t new_load);
  // The warm instance with the fewest outstanding requests (ties: lowest index); nullopt when
  // none is warm.
  std::optional<int32_t> LeastLoaded() const;
  int warm_count() const { return static_cast<int>(by_load_.size()); }

  // Requests waiting for a warm instance, oldest first.
  std::deque<Request> held;

 private:
  absl::btree_set<std::pair<int64_t, int32_t>> by_load_;
};

// When a free instance with `queued` >= 1 waiting requests, the oldest of which arrived at
// `oldest`, starts its next batch: `now` if `queued` >= `max_batch` or the oldest has waited
// `max_delay` (batch start is due), else oldest + max_delay (check again then).
absl::Time BatchDueAt(absl::Time now, int64_t queued, absl::Time oldest, int max_batch,
                      absl::Duration max_delay);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_ENGINE_GATEWAY_H_
