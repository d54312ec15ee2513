// QUART's pipeline-stage smoother (§5.2, Eq. 7, Algorithm 1 "Smooth"): how many replicas each
// stage can give back, Laplace-smoothed toward its neighbours' demand by a CV-dependent weight,
// and delayed while a burst is still travelling down the pipeline. Owned by QuartScaler, one per
// pipeline. Pure: time comes in as an argument. Not thread-safe.
#ifndef SLUICE_CORE_QUART_REPLICA_SMOOTHER_H_
#define SLUICE_CORE_QUART_REPLICA_SMOOTHER_H_

#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace sluice::core {

// Defaults and why:
//   beta_min 0.5: beta(CV) = beta_min + (1 - beta_min) CV^2 / (1 + CV^2), the weight of the
//     stage's own demand in Eq. 7. A Poisson stage (CV 1) keeps 75 % of its own demand, a smooth
//     one (CV -> 0) half, a bursty one (CV 4) 97 %: the burstier the stage, the less it follows
//     its neighbours. The paper names beta's shape only ("a buffering function of CV").
//   base_hold 30 s: a surplus must persist this long before a replica goes (three 10 s windows;
//     QUART's stage cold start from the host cache is ~1 s, from disk tens of seconds, so giving
//     back too early costs a disk load when the burst returns).
//   propagation_hold_factor 2: the hold also covers twice the time a request needs to reach the
//     stage (the sum of upstream sojourns), so a burst seen upstream arrives before reclaiming.
//   burst_cv 1.5: an upstream stage whose predicted arrival CV exceeds this is bursting; while
//     any is, the stage's surplus clock restarts.
//   max_reclaim_per_step 1: replicas leave one at a time (gentle, as "Smooth" intends).
struct SmootherConfig {
  double beta_min = 0.5;                         // in [0, 1]
  absl::Duration base_hold = absl::Seconds(30);  // >= 0, finite
  double propagation_hold_factor = 2.0;          // >= 0
  double burst_cv = 1.5;                         // > 0
  int max_reclaim_per_step = 1;                  // >= 1
};

// One stage as the smoother sees it.
struct SmoothInput {
  int replicas = 0;               // r_i: ready + starting GPU replicas
  int min_replicas = 1;           // r_i,min
  int stable_floor = 1;           // fewest replicas keeping rho < 1 (floor(lambda / mu) + 1)
  double demand = 0;              // y-hat_i: replicas the stage needs (G/G/c at its predicted CV)
  double predicted_cv = 1;        // CV_i from cv_propagation.h
  absl::Duration upstream_delay;  // sum of upstream stages' sojourn times
};

class ReplicaSmoother {
 public:
  // InvalidArgument naming the field when a value is out of its range.
  static absl::StatusOr<ReplicaSmoother> Create(const SmootherConfig& config, int stages);

  // Eq. 7's weight beta(CV), in [beta_min, 1).
  double Beta(double cv) const;

  // Eq. 7 for stage i of a chain (neighbours i - 1 and i + 1 where they exist).
  double SmoothedDemand(const std::vector<SmoothInput>& stages, int i) const;

  // Replicas each stage gives back now (>= 0, at most max_reclaim_per_step, never below
  // max(min_replicas, stable_floor, ceil(smoothed demand))). A stage's surplus starts a clock;
  // it reclaims once the clock has run base_hold + factor x upstream_delay with no upstream
  // burst, and the clock restarts after each reclaim. Precondition: stages.size() == the size
  // given to Create.
  std::vector<int> Reclaim(const std::vector<SmoothInput>& stages, absl::Time now);

  // The earliest time a pending surplus matures (InfiniteFuture when none is pending).
  absl::Time NextWakeup() const { return next_wakeup_; }

 private:
  ReplicaSmoother(const SmootherConfig& c, int stages) : config_(c), surplus_since_(stages) {}
  // How long stage `s`'s surplus must persist: base_hold + factor x upstream_delay.
  absl::Duration Hold(const SmoothInput& s) const;

  SmootherConfig config_;
  std::vector<std::optional<absl::Time>> surplus_since_;
  absl::Time next_wakeup_ = absl::InfiniteFuture();
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_QUART_REPLICA_SMOOTHER_H_
