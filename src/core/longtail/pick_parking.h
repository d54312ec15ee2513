// PickParking: which of a function's instances to park (memory-only idle, issue 13 item 4) and
// which to un-park, given how many should hold their SM share (HorizontalScaler::ActiveWanted).
// The one rule of both worlds: the simulator's engine (src/sim/engine/parking.cc) and the
// controller (src/runtime/controller/controller_park.cc) build the candidates from their own
// books and apply the decision. Pure: time comes in as each candidate's idle_since.
#ifndef SLUICE_CORE_LONGTAIL_PICK_PARKING_H_
#define SLUICE_CORE_LONGTAIL_PICK_PARKING_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/time/time.h"

namespace sluice::core {

// One instance that may be parked or un-parked: warm (ready) and serving; the drivers leave out
// instances that are starting, draining or being removed.
struct ParkingCandidate {
  int64_t id = 0;
  bool parked = false;  // holds no SM share now
  int in_flight = 0;    // requests dispatched to it and not answered yet
  // When it last had work in flight (or became warm, if it never had); a driver may use any
  // monotone clock, the rule only compares candidates with one another.
  absl::Time idle_since = absl::InfinitePast();
};

struct ParkingDecision {
  std::vector<int64_t> park;    // in the order they were picked
  std::vector<int64_t> unpark;  // in the order they were picked
};

// The rule (n candidates, `busy` of them with in_flight > 0, wanted = max(0, active_wanted)):
//   1. an instance with work in flight is never parked, and a parked one with work in flight
//      is un-parked (it is serving: the token server has woken it already);
//   2. while more than `wanted` hold a share, park idle active ones, the longest idle first
//      (smallest idle_since; among equals the smallest id);
//   3. while fewer than `wanted` hold a share, un-park parked ones, the most recently idle
//      first (largest idle_since; among equals the largest id: exactly the reverse of 2).
// After applying it, max(min(wanted, n), busy) candidates hold a share. Candidates need not be
// sorted; ids should be distinct. Deterministic.
ParkingDecision PickParking(std::span<const ParkingCandidate> candidates, int active_wanted);

}  // namespace sluice::core

#endif  // SLUICE_CORE_LONGTAIL_PICK_PARKING_H_
