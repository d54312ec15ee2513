// Gateway of one function in the simulator: holds requests while no instance of the function is
// warm and picks the least-loaded warm instance for each request (when a free instance starts its
// next batch is core::BatchDueAt, shared with the runtime gateway). Used by the engine; not
// thread-safe.
#ifndef SLUICE_SIM_ENGINE_GATEWAY_H_
#define SLUICE_SIM_ENGINE_GATEWAY_H_

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/time/time.h"

#include "sim/engine/instance.h"

namespace sluice::sim {

class Gateway {
 public:
  // Bucket positions are kept in a table indexed by instance index. Gateways of one engine may
  // share one table (instance indices are unique across functions): pass it here; by default
  // the gateway uses its own. The table must outlive the gateway.
  void set_position_table(std::vector<int32_t>* table) { table_ = table; }

  // Warm instances eligible for dispatch, with their load (requests outstanding on them). The
  // caller passes the load it registered last (it owns the count).
  void AddWarm(int32_t instance, int64_t load);
  void RemoveWarm(int32_t instance, int64_t load);
  void UpdateLoad(int32_t instance, int64_t old_load, int64_t new_load);
  // A warm instance with the fewest outstanding requests (among equals, the one that reached
  // that load last); nullopt when none is warm. Deterministic.
  std::optional<int32_t> LeastLoaded() const {
    if (count_ == 0)
      return std::nullopt;
    return buckets_[min_].back();
  }
  int warm_count() const { return static_cast<int>(count_); }

  // Requests waiting for a warm instance, oldest first.
  RequestQueue held;

 private:
  std::vector<int32_t>& positions() { return table_ != nullptr ? *table_ : own_positions_; }

  // buckets_[l] = warm instances with load l; positions()[i] = index of instance i in its
  // bucket (-1 when not warm here). Loads move by small steps, so keeping min_ current is O(1)
  // amortized.
  std::vector<std::vector<int32_t>> buckets_;
  std::vector<int32_t>* table_ = nullptr;
  std::vector<int32_t> own_positions_;
  int64_t min_ = 0;
  int64_t count_ = 0;
};

}  // namespace sluice::sim

#endif  // SLUICE_SIM_ENGINE_GATEWAY_H_
