// Stage sizing rules (see stage_sizing.h).
#include "core/registry/stage_sizing.h"

#include <algorithm>
#include <cmath>

namespace sluice::core {

double StageThroughput(const FunctionTraits& f) {
  if (f.capacity_rps > 0 && std::isfinite(f.capacity_rps))
    return f.capacity_rps;
  if (f.latency == nullptr)
    return 0;
  const int batch = std::max(1, f.max_batch);
  const absl::Duration t = f.latency->BatchLatency(batch, 1.0);
  if (t <= absl::ZeroDuration() || t == absl::InfiniteDuration())
    return 0;
  return batch / absl::ToDoubleSeconds(t);
}

absl::Duration StageTarget(absl::Duration target, absl::Duration slo, int stages, double mu) {
  const bool known_mu = mu > 0 && std::isfinite(mu);
  absl::Duration t = target;
  if (t <= absl::ZeroDuration() || t == absl::InfiniteDuration()) {
    if (slo > absl::ZeroDuration() && slo != absl::InfiniteDuration())
      t = slo / std::max(1, stages);
    else
      t = known_mu ? absl::Seconds(4.0 / mu) : absl::Seconds(1);
  }
  if (known_mu)
    t = std::max(t, absl::Seconds(kMinBudgetOverService / mu));
  return t;
}

}  // namespace sluice::core
