// LinearLatency: a hand-computable LatencyModel for HAS-GPU tests. A batch of b needs 10 ms x b of
// the whole GPU; it can use at most min(1, 0.25 b) of the SMs, and runs a fraction q of the time:
//   latency(b, s, q) = 10 ms x b / (min(s, 0.25 b) x q).
// At b = 4 (and any s) a pod therefore serves 100 x s x q requests/s. Header-only, immutable.
#ifndef SLUICE_CORE_HASGPU_TESTING_LINEAR_LATENCY_H_
#define SLUICE_CORE_HASGPU_TESTING_LINEAR_LATENCY_H_

#include <algorithm>

#include "core/perf/perf_model.h"

namespace sluice::core {

class LinearLatency : public LatencyModel {
 public:
  absl::Duration BatchLatency(int batch, double sm, double q) const override {
    const double b = std::max(1, batch);
    const double s = std::min(std::clamp(sm, 0.01, 1.0), 0.25 * b);
    return absl::Milliseconds(10 * b) / (s * std::clamp(q, 0.01, 1.0));
  }
  absl::Duration IterationTime(double sm) const override { return absl::Seconds(1) / sm; }
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_HASGPU_TESTING_LINEAR_LATENCY_H_
