// The concrete ArrivalSources behind MakeArrivalSource: renewal processes (Poisson, Gamma),
// bucketed count series (RPS series, Azure Functions minutes) and per-request trace replay.
// Each works in "source seconds" (0 = start of the process, series or trace) and a ReplayWindow
// maps those to absolute time. Used only by make_source.cc and tests. Sources are not thread-safe.
#ifndef SLUICE_SIM_WORKLOAD_SOURCES_H_
#define SLUICE_SIM_WORKLOAD_SOURCES_H_

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/time/time.h"

#include "sim/workload/arrivals.h"
#include "sim/workload/trace_readers.h"
#include "sim/workload/workload_spec.h"

namespace sluice::sim {

// Source second `offset_s` maps to `start`; arrivals before it are skipped and those at or after
// `start + horizon` end the source.
struct ReplayWindow {
  absl::Time start;
  double offset_s = 0;
  absl::Duration horizon = absl::InfiniteDuration();

  absl::Time ToTime(double source_s) const { return start + absl::Seconds(source_s - offset_s); }
  absl::Time end() const { return start + horizon; }
  double horizon_s() const { return absl::ToDoubleSeconds(horizon); }  // may be +inf
};

enum class RenewalKind {
  kExponential,  // Poisson process
  kGamma,        // inter-arrival Gamma with coefficient of variation `cv`
};

// Inter-arrival times i.i.d. with mean 1/rate_rps; rate 0 gives no arrivals. Requires rate >= 0,
// cv > 0.
std::unique_ptr<ArrivalSource> MakeRenewalSource(RenewalKind kind, double rate_rps, double cv,
                                                 uint64_t seed, const ReplayWindow& window);

// values[b] * scale requests in bucket b = [b * width, (b + 1) * width) source seconds, placed
// per `spread` (workload_spec.h). Requires values >= 0, scale >= 0, width > 0.
std::unique_ptr<ArrivalSource> MakeBucketSource(std::vector<double> values, double scale,
                                                absl::Duration width, ArrivalSpread spread,
                                                uint64_t seed, const ReplayWindow& window);

// Replays `rows` (sorted by at_s) at source second at_s / time_scale. Requires time_scale > 0.
std::unique_ptr<ArrivalSource> MakeTraceSource(std::vector<TraceRequest> rows, double time_scale,
                                               const ReplayWindow& window);

// One long-tail function (workload_spec.h: LongTailArrivals): a timer, or a Gamma renewal
// process stretched by the diurnal rate curve. Lazy: each Next() computes one arrival.
// Requires rate >= 0, cv > 0, amplitude in [0, 1); timers need timer_period > 0.
std::unique_ptr<ArrivalSource> MakeLongTailSource(const LongTailArrivals& params, uint64_t seed,
                                                  const ReplayWindow& window);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_WORKLOAD_SOURCES_H_
