// LoadWindow: what the gateway measures of one function between two load reports, beyond the
// arrival count: the CV of inter-arrival times and the mean sojourn (arrival to answer) of the
// requests answered in the window. The controller's pipeline scaler reads both per stage
// (core::PipelineStageSample::arrival_cv, measured_latency). The controller's dashboard reads
// the window's sojourn percentiles and SLO violations (failed and rejected requests count as
// violations). Used by GatewayCore (one per function). Not thread-safe: owned by the gateway's
// loop.
#ifndef SLUICE_RUNTIME_GATEWAY_LOAD_WINDOW_H_
#define SLUICE_RUNTIME_GATEWAY_LOAD_WINDOW_H_

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/time/time.h"
#include "core/serving/arrival_stats.h"

namespace sluice::runtime::internal {

class LoadWindow {
 public:
  void OnArrival(absl::Time now) { gaps_.OnArrival(now); }
  // `failed`: answered with an error status (counts as an SLO violation).
  void OnAnswered(absl::Duration sojourn, bool failed = false) {
    ++answered_;
    sojourn_sum_ += sojourn;
    sojourns_ms_.push_back(absl::ToDoubleMilliseconds(sojourn));
    failed_ += failed ? 1 : 0;
  }
  // A request turned away at admission (429): a violation, not answered.
  void OnRejected() { ++rejected_; }
  // The q-quantile (0..1, nearest rank) of the window's sojourns in ms; 0 when none.
  double SojournPercentileMs(double q) const {
    if (sojourns_ms_.empty())
      return 0;
    std::vector<double> v = sojourns_ms_;
    const size_t k = std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())));
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
    return v[k];
  }
  // Failed, rejected and (slo_ms > 0) slower-than-slo_ms requests of the window.
  int64_t SloViolations(double slo_ms) const {
    int64_t late = 0;
    if (slo_ms > 0)
      late = std::count_if(sojourns_ms_.begin(), sojourns_ms_.end(),
                           [&](double ms) { return ms > slo_ms; });
    return late + failed_ + rejected_;
  }
  int64_t rejected() const { return rejected_; }
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
    sojourns_ms_.clear();
    failed_ = 0;
    rejected_ = 0;
  }

 private:
  core::ArrivalStats gaps_;  // the same measurement the simulator's pipeline stages make
  int64_t answered_ = 0;
  absl::Duration sojourn_sum_;
  std::vector<double> sojourns_ms_;  // of the window's answers (failed ones too)
  int64_t failed_ = 0;
  int64_t rejected_ = 0;
};

}  // namespace sluice::runtime::internal

#endif  // SLUICE_RUNTIME_GATEWAY_LOAD_WINDOW_H_
