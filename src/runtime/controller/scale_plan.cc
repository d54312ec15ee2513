// Scale-in victim order and scaler configuration (see scale_plan.h).
#include "runtime/controller/scale_plan.h"

#include <algorithm>
#include <tuple>

namespace sluice::runtime {

std::vector<int64_t> PickScaleIn(std::vector<ScaleInCandidate> candidates, int count) {
  std::sort(candidates.begin(), candidates.end(),
            [](const ScaleInCandidate& a, const ScaleInCandidate& b) {
              return std::make_tuple(a.ready, a.in_flight, -a.id) <
                     std::make_tuple(b.ready, b.in_flight, -b.id);
            });
  std::vector<int64_t> ids;
  for (int i = 0; i < count && i < static_cast<int>(candidates.size()); ++i) {
    ids.push_back(candidates[i].id);
  }
  return ids;
}

core::LazyScalerConfig ScalerConfigFor(const core::LazyScalerConfig& base, int min, int max,
                                       double capacity_rps) {
  core::LazyScalerConfig c = base;
  c.min_instances = min;
  c.max_instances = max;
  c.capacity_rps = capacity_rps;
  return c;
}

}  // namespace sluice::runtime
