// Which instances of a function to drain when its desired count falls: the scale-in order shared
// by the simulator's engine and the runtime controller. Thread-safe: a pure function.
#ifndef SLUICE_CORE_SERVING_SCALE_IN_H_
#define SLUICE_CORE_SERVING_SCALE_IN_H_

#include <cstdint>
#include <vector>

namespace sluice::core {

struct ScaleInCandidate {
  int64_t id = 0;        // ids grow with time: a larger id is a newer instance
  bool ready = false;    // false: still starting (serves nothing yet, cold start not yet paid)
  int64_t in_flight = 0;  // requests outstanding on it
};

// The `count` instances to drain first, at most candidates.size(), distinct: starting ones before
// ready ones, then the least loaded, then the newest.
std::vector<int64_t> PickScaleIn(std::vector<ScaleInCandidate> candidates, int count);

}  // namespace sluice::core

#endif  // SLUICE_CORE_SERVING_SCALE_IN_H_
