// LazyScaler: Dilu's lazy horizontal scaling (ASPLOS'25 §3.4.2), one HorizontalScaler per
// function, fed one LoadSample per second by the simulator or the controller. Scaling out waits
// until the load has stayed high for a good part of the window, so short bursts are absorbed by
// vertical scale-up instead of cold starts. Not thread-safe.
#ifndef SLUICE_CORE_DILU_LAZY_SCALER_H_
#define SLUICE_CORE_DILU_LAZY_SCALER_H_

#include <memory>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "common/ring_queue.h"
#include "core/policy/horizontal.h"

namespace sluice::core {

struct LazyScalerConfig {
  absl::Duration window = absl::Seconds(40);
  int phi_out = 20;
  int phi_in = 30;
  int min_instances = 1;  // 0 allowed (scale to zero)
  int max_instances = 1 << 20;
  bool reset_window_on_scale = false;
  double capacity_rps = 0;  // used when a sample carries no capacity
};

// The window holds the samples of the last `window` (40 s, one per second). With n deployed
// instances (LoadSample::instances, warm or starting) of capacity c (profiled serving throughput):
//   - scale out to n + 1 when at least phi_out (20) samples have rps > n c;
//   - otherwise scale in to n - 1 when more than phi_in (30) samples have rps < (n - 1) c; with
//     n = 1, (n - 1) c = 0 and a sample counts as low when rps == 0, so min_instances = 0 lets an
//     idle function scale to zero;
//   - n = 0 and any arrivals (rps > 0 or queued > 0) -> 1 at once (nothing else could serve them);
//   - a capacity <= 0 (unknown) makes no load-based decision.
// The result is clamped to [min_instances, max_instances]. Counts are taken against the current n
// at every sample, so after a scale-out the old high samples are judged against the larger
// capacity and cannot trigger a second scale-out unless the load also exceeds (n + 1) c.
// Window after a decision: kept by default (Desired is then a pure function of the window and n,
// hence monotone in load, and phi_out + phi_in > window samples rules out flapping);
// reset_window_on_scale = true clears it as Dilu's scaler.py does.
class LazyScaler final : public HorizontalScaler {
 public:
  // InvalidArgument unless window > 0, phi_out >= 1, phi_in >= 0,
  // 0 <= min_instances <= max_instances, capacity_rps >= 0.
  static absl::StatusOr<std::unique_ptr<LazyScaler>> Create(const LazyScalerConfig& config);

  std::string_view name() const override { return "dilu-lazy"; }
  // Samples must come in non-decreasing time order.
  void Observe(const LoadSample& sample) override;
  // The decision taken at the last sample (min_instances before any sample).
  int Desired(absl::Time now) const override { return desired_; }
  // While the last decision kept `instances` (as counted then): min(SamplesBeforeScaleOut,
  // SamplesBeforeScaleIn). 0 otherwise.
  int SamplesWithoutDecision(absl::Time now, absl::Duration interval,
                             int instances) const override;
  // Each further sample adds at most one high and one low sample (those leaving the window only
  // lower the counts), so phi_out - 1 - high samples cannot reach the scale-out threshold and
  // phi_in - low cannot pass the scale-in one. Both 0 unless the last sample counted
  // `instances` (>= 1) with a known capacity.
  int SamplesBeforeScaleOut(int instances) const;
  int SamplesBeforeScaleIn(int instances) const;
  // The thresholds the counts were taken against: a sample is high when rps > HighAbove(), low
  // when rps < LowBelow() or (one instance) rps <= 0.
  double HighAbove() const { return counted_n_ * counted_cap_; }
  double LowBelow() const { return (counted_n_ - 1) * counted_cap_; }

  // Window contents counted at the last sample (for tests and traces).
  int high_samples() const { return high_; }
  int low_samples() const { return low_; }
  int window_size() const { return static_cast<int>(window_.size()); }

 private:
  struct Point {
    absl::Time at;
    double rps;
  };
  explicit LazyScaler(const LazyScalerConfig& config)
      : config_(config), desired_(config.min_instances) {}
  int Clamp(int n) const;
  // Adds `sign` (+1 / -1) x the point's high / low flags against counted_n_ / counted_cap_.
  void Count(const Point& p, int sign);
  void Recount(int n, double cap);

  LazyScalerConfig config_;
  common::RingQueue<Point> window_;
  int desired_;
  int high_ = 0;  // as counted at the last sample (0 when it made no load-based decision)
  int low_ = 0;
  // The window's high / low counts against (counted_n_, counted_cap_), kept up to date as points
  // enter and leave, recounted only when n or the capacity changes: O(1) per steady sample.
  int counted_n_ = 0;  // 0: nothing counted yet
  double counted_cap_ = 0;
  int counted_high_ = 0;
  int counted_low_ = 0;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_DILU_LAZY_SCALER_H_
