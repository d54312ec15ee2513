// ArrivalStats: the CV of a stream's inter-arrival gaps (Welford mean and variance), the per-stage
// `core::PipelineStageSample::arrival_cv` that QUART's sizing reads. One measurement for both
// worlds: the simulator's pipeline stages (src/sim/engine) and the gateway's per-function load
// window (src/runtime/gateway) feed it arrival times. Pure: time comes in as an argument.
// Not thread-safe: one owner.
#ifndef SLUICE_CORE_SERVING_ARRIVAL_STATS_H_
#define SLUICE_CORE_SERVING_ARRIVAL_STATS_H_

#include <cmath>
#include <cstdint>

#include "absl/time/time.h"

namespace sluice::core {

class ArrivalStats {
 public:
  // One arrival; from the second arrival on, each adds the gap to the previous one.
  void OnArrival(absl::Time now) {
    if (last_ != absl::InfinitePast()) AddGap(absl::ToDoubleSeconds(now - last_));
    last_ = now;
  }
  // Population CV of the gaps seen since construction or the last Reset(); `unknown` with fewer
  // than two gaps or a zero mean gap.
  double Cv(double unknown) const {
    if (gaps_ < 2 || mean_ <= 0) return unknown;
    return std::sqrt(m2_ / static_cast<double>(gaps_)) / mean_;
  }
  int64_t gaps() const { return gaps_; }
  // Starts a new window. The last arrival is kept, so the window's first gap spans the boundary.
  void Reset() {
    gaps_ = 0;
    mean_ = m2_ = 0;
  }

 private:
  void AddGap(double gap_s) {
    ++gaps_;
    const double d = gap_s - mean_;
    mean_ += d / static_cast<double>(gaps_);
    m2_ += d * (gap_s - mean_);
  }

  absl::Time last_ = absl::InfinitePast();
  int64_t gaps_ = 0;
  double mean_ = 0;
  double m2_ = 0;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_SERVING_ARRIVAL_STATS_H_
