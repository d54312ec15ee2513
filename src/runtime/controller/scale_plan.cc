// Scaler configuration (see scale_plan.h).
#include "runtime/controller/scale_plan.h"

namespace sluice::runtime {

core::LazyScalerConfig ScalerConfigFor(const core::LazyScalerConfig& base, int min, int max,
                                       double capacity_rps) {
  core::LazyScalerConfig c = base;
  c.min_instances = min;
  c.max_instances = max;
  c.capacity_rps = capacity_rps;
  return c;
}

}  // namespace sluice::runtime
