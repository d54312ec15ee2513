// Pure scaling helpers of the controller: which instances to drain on scale-in, and the
// LazyScaler configuration of a function. Used by the controller daemon; tested on their own.
// Thread-safe: pure functions.
#ifndef SLUICE_RUNTIME_CONTROLLER_SCALE_PLAN_H_
#define SLUICE_RUNTIME_CONTROLLER_SCALE_PLAN_H_

#include <cstdint>
#include <vector>

#include "core/dilu/lazy_scaler.h"

namespace sluice::runtime {

struct ScaleInCandidate {
  int64_t id = 0;      // instance ids grow with time: a larger id is a newer instance
  bool ready = false;  // false: still starting (serves nothing yet)
  int in_flight = 0;
};

// The `count` instances to drain first: starting ones before ready ones (they serve nothing yet),
// then the least loaded, then the newest. Returns ids, at most candidates.size().
std::vector<int64_t> PickScaleIn(std::vector<ScaleInCandidate> candidates, int count);

// `base` (window, phi) with the function's bounds and capacity.
core::LazyScalerConfig ScalerConfigFor(const core::LazyScalerConfig& base, int min, int max,
                                       double capacity_rps);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_CONTROLLER_SCALE_PLAN_H_
