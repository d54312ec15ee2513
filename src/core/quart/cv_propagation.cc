// QNA departure-CV propagation (see cv_propagation.h).
#include "core/quart/cv_propagation.h"

#include <algorithm>
#include <cmath>

namespace sluice::core {
namespace {

double Clean(double x) {
  return std::isfinite(x) && x > 0 ? x : 0.0;
}

}  // namespace

double DepartureCv(double arrival_cv, double service_cv, double utilisation, int replicas) {
  const double ca2 = Clean(arrival_cv) * Clean(arrival_cv);
  const double cs2 = Clean(service_cv) * Clean(service_cv);
  const double rho = std::min(1.0, Clean(utilisation));
  const double c = std::max(1, replicas);
  const double cd2 = 1.0 + (1.0 - rho * rho) * (ca2 - 1.0) + rho * rho * (cs2 - 1.0) / std::sqrt(c);
  return std::sqrt(std::max(0.0, cd2));
}

std::vector<double> PredictStageCvs(double entry_cv, const std::vector<StageCvInput>& stages) {
  std::vector<double> out;
  out.reserve(stages.size());
  double cv = Clean(entry_cv);
  for (const StageCvInput& s : stages) {
    out.push_back(cv);
    cv = DepartureCv(cv, s.service_cv, s.utilisation, s.replicas);
  }
  return out;
}

}  // namespace sluice::core
