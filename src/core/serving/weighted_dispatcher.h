// WeightedDispatcher: picks the instance of one function that receives the next batch, weighted by
// each instance's capacity (requests/s): the ready instance minimising
// (in_flight_batches + 1) / capacity. Used by runtime/gateway. Pure; not thread-safe.
#ifndef SLUICE_CORE_SERVING_WEIGHTED_DISPATCHER_H_
#define SLUICE_CORE_SERVING_WEIGHTED_DISPATCHER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace sluice::core {

class WeightedDispatcher {
 public:
  // Adds an instance or updates its capacity and readiness (its in-flight count is kept).
  // capacity_rps <= 0 means unknown: such an instance is weighted with the mean capacity of the
  // instances whose capacity is known, or 1 when none is. Only ready instances are picked.
  void Upsert(int64_t id, double capacity_rps, bool ready);
  // Forgets an instance (its in-flight batches are no longer counted). False when unknown.
  bool Remove(int64_t id);

  // The ready instance with the least (in_flight + 1) / effective capacity, ties to the lowest
  // id, skipping instances with `in_flight >= max_in_flight` when max_in_flight > 0; nullopt when
  // none qualifies. Does not change state: call OnDispatch for the pick.
  // `exclude`: ids not to pick (instances a retried request already failed on).
  std::optional<int64_t> Pick(int max_in_flight = 0,
                              const std::vector<int64_t>& exclude = {}) const;
  // A batch was sent to / came back from `id` (unknown ids are ignored).
  void OnDispatch(int64_t id);
  void OnComplete(int64_t id);

  // Sum of effective capacities of ready instances (0 when none is ready).
  double ReadyCapacity() const;
  int ready_count() const;
  int size() const { return static_cast<int>(instances_.size()); }
  bool contains(int64_t id) const { return instances_.contains(id); }
  int in_flight(int64_t id) const;
  double EffectiveCapacity(int64_t id) const;

 private:
  struct Instance {
    double capacity_rps = 0;
    bool ready = false;
    int in_flight = 0;
  };
  double UnknownCapacity() const;  // weight for instances with capacity <= 0

  std::map<int64_t, Instance> instances_;  // ordered: ties go to the lowest id
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_SERVING_WEIGHTED_DISPATCHER_H_
