// Nelder-Mead simplex minimiser, used by the performance-model fits (perf_fit.h) to fit a handful
// of parameters in log space. Pure computation; thread-safe (no shared state).
#ifndef SLUICE_CORE_PERF_NELDER_MEAD_H_
#define SLUICE_CORE_PERF_NELDER_MEAD_H_

#include <functional>
#include <span>
#include <vector>

namespace sluice::core {

struct NelderMeadOptions {
  int max_evaluations = 20000;
  // Stops when the spread of objective values over the simplex falls below this.
  double tolerance = 1e-12;
  // Restarts from the best point with a fresh simplex; helps escape collapsed simplices.
  int restarts = 3;
};

struct NelderMeadResult {
  std::vector<double> x;
  double value = 0;
  int evaluations = 0;
};

// Minimises `f` starting from `x0` with initial simplex steps `step` (same size as x0; a zero
// step holds that coordinate fixed). `f` may return +infinity for infeasible points.
NelderMeadResult NelderMead(const std::function<double(std::span<const double>)>& f,
                            std::vector<double> x0, const std::vector<double>& step,
                            const NelderMeadOptions& options = {});

}  // namespace sluice::core

#endif  // SLUICE_CORE_PERF_NELDER_MEAD_H_
