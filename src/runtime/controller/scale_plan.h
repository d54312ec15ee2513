// The LazyScaler configuration of a function (the scale-in order is core::PickScaleIn,
// core/serving/scale_in.h). Used by the controller daemon. Thread-safe: a pure function.
#ifndef SLUICE_RUNTIME_CONTROLLER_SCALE_PLAN_H_
#define SLUICE_RUNTIME_CONTROLLER_SCALE_PLAN_H_

#include "core/dilu/lazy_scaler.h"

namespace sluice::runtime {

// `base` (window, phi) with the function's bounds and capacity.
core::LazyScalerConfig ScalerConfigFor(const core::LazyScalerConfig& base, int min, int max,
                                       double capacity_rps);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_CONTROLLER_SCALE_PLAN_H_
