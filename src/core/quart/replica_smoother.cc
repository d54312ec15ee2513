// CV-weighted smoothing and delayed reclaim (see replica_smoother.h).
#include "core/quart/replica_smoother.h"

#include <algorithm>
#include <cmath>

namespace sluice::core {

absl::StatusOr<ReplicaSmoother> ReplicaSmoother::Create(const SmootherConfig& c, int stages) {
  if (!(c.beta_min >= 0 && c.beta_min <= 1)) {
    return absl::InvalidArgumentError("field 'beta_min': must be in [0, 1]");
  }
  if (c.base_hold < absl::ZeroDuration() || c.base_hold == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError("field 'base_hold': must be finite and >= 0");
  }
  if (!(c.propagation_hold_factor >= 0) || !std::isfinite(c.propagation_hold_factor)) {
    return absl::InvalidArgumentError("field 'propagation_hold_factor': must be finite and >= 0");
  }
  if (!(c.burst_cv > 0) || !std::isfinite(c.burst_cv)) {
    return absl::InvalidArgumentError("field 'burst_cv': must be finite and > 0");
  }
  if (c.max_reclaim_per_step < 1) {
    return absl::InvalidArgumentError("field 'max_reclaim_per_step': must be >= 1");
  }
  if (stages < 1)
    return absl::InvalidArgumentError("field 'stages': must be >= 1");
  return ReplicaSmoother(c, stages);
}

double ReplicaSmoother::Beta(double cv) const {
  const double v = std::isfinite(cv) && cv > 0 ? cv * cv : 0.0;
  return config_.beta_min + (1.0 - config_.beta_min) * v / (1.0 + v);
}

double ReplicaSmoother::SmoothedDemand(const std::vector<SmoothInput>& stages, int i) const {
  const int n = static_cast<int>(stages.size());
  double sum = 0;
  int count = 0;
  for (int j : {i - 1, i + 1}) {
    if (j < 0 || j >= n)
      continue;
    sum += stages[j].demand;
    ++count;
  }
  const double own = stages[i].demand;
  if (count == 0)
    return own;
  const double beta = Beta(stages[i].predicted_cv);
  return beta * own + (1.0 - beta) * sum / count;
}

std::vector<int> ReplicaSmoother::Reclaim(const std::vector<SmoothInput>& stages, absl::Time now) {
  const int n = static_cast<int>(stages.size());
  std::vector<int> out(n, 0);
  next_wakeup_ = absl::InfiniteFuture();
  bool upstream_burst = false;
  for (int i = 0; i < n; ++i) {
    const SmoothInput& s = stages[i];
    const int keep = std::max({s.min_replicas, s.stable_floor,
                               static_cast<int>(std::ceil(SmoothedDemand(stages, i) - 1e-9))});
    std::optional<absl::Time>& since = surplus_since_[i];
    if (s.replicas <= keep) {
      since.reset();
    } else {
      // A burst upstream will reach this stage: keep the replicas and restart its clock.
      if (!since.has_value() || upstream_burst)
        since = now;
      const absl::Time due = *since + Hold(s);
      if (now >= due) {
        out[i] = std::min(s.replicas - keep, config_.max_reclaim_per_step);
        since = now;
        next_wakeup_ = std::min(next_wakeup_, now + Hold(s));
      } else {
        next_wakeup_ = std::min(next_wakeup_, due);
      }
    }
    upstream_burst = upstream_burst || s.predicted_cv > config_.burst_cv;
  }
  return out;
}

absl::Duration ReplicaSmoother::Hold(const SmoothInput& s) const {
  if (config_.propagation_hold_factor == 0)
    return config_.base_hold;
  return config_.base_hold + config_.propagation_hold_factor * s.upstream_delay;
}

}  // namespace sluice::core
