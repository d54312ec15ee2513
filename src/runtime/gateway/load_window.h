// LoadWindow: what the gateway measures of one function between two load reports, beyond the
// arrival count: the CV of inter-arrival times and the mean sojourn (arrival to answer) of the
// requests answered in the window. The controller's pipeline scaler reads both per stage
// (core::PipelineStageSample::arrival_cv, measured_latency). Used by GatewayCore (one per
// function). Not thread-safe: owned by the gateway's loop.
#ifndef SLUICE_RUNTIME_GATEWAY_LOAD_WINDOW_H_
#define SLUICE_RUNTIME_GATEWAY_LOAD_WINDOW_H_

#include <cstdint>

#include "absl/time/time.h"
#include "core/serving/arrival_stats.h"

namespace sluice::runtime::internal {

class LoadWindow {
 public:
  void OnArrival(absl::Time now) { gaps_.OnArrival(now); }
  void OnAnswered(absl::Duration sojourn) {
    ++answered_;
    sojourn_sum_ += sojourn;
  }
  // CV of the window's inter-arrival gaps; 1 (Poisson, the neutral value) with fewer than 2.
  double ArrivalCv() const { return gaps_.Cv(1.0); }
  // Mean sojourn of the window's answers; zero when none.
  absl::Duration MeanSojourn() const {
    return answered_ == 0 ? absl::ZeroDuration() : sojourn_sum_ / answered_;
  }
  int64_t answered() const { return answered_; }
  // Starts the next window (the last arrival is kept: the first gap spans the boundary).
  void Reset() {
    gaps_.Reset();
    answered_ = 0;
    sojourn_sum_ = absl::ZeroDuration();
  }

 private:
  core::ArrivalStats gaps_;  // the same measurement the simulator's pipeline stages make
  int64_t answered_ = 0;
  absl::Duration sojourn_sum_;
};

}  // namespace sluice::runtime::internal

#endif  // SLUICE_RUNTIME_GATEWAY_LOAD_WINDOW_H_
