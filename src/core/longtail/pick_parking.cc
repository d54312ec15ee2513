// PickParking: see pick_parking.h.
#include "core/longtail/pick_parking.h"

#include <algorithm>

namespace sluice::core {
namespace {

// Longest idle first; among equals the smallest id.
bool LongerIdle(const ParkingCandidate* a, const ParkingCandidate* b) {
  return a->idle_since != b->idle_since ? a->idle_since < b->idle_since : a->id < b->id;
}

}  // namespace

ParkingDecision PickParking(std::span<const ParkingCandidate> candidates, int active_wanted) {
  const int wanted = std::max(0, active_wanted);
  ParkingDecision d;
  int active = 0;
  std::vector<const ParkingCandidate*> idle_active, idle_parked;
  for (const ParkingCandidate& c : candidates) {
    if (c.parked && c.in_flight > 0) {
      d.unpark.push_back(c.id);  // rule 1: serving, so it holds a share
      ++active;
    } else if (c.parked) {
      idle_parked.push_back(&c);
    } else {
      ++active;
      if (c.in_flight == 0)
        idle_active.push_back(&c);
    }
  }
  if (active > wanted) {
    std::sort(idle_active.begin(), idle_active.end(), LongerIdle);
    for (size_t k = 0; k < idle_active.size() && active > wanted; ++k, --active)
      d.park.push_back(idle_active[k]->id);
  } else if (active < wanted) {
    std::sort(idle_parked.begin(), idle_parked.end(), LongerIdle);
    for (size_t k = idle_parked.size(); k > 0 && active < wanted; --k, ++active)
      d.unpark.push_back(idle_parked[k - 1]->id);
  }
  return d;
}

}  // namespace sluice::core
