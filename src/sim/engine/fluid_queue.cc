// Allen-Cunneen's scaling of the M/M/c wait (core::ErlangC), with the batch-residual tail.
#include "sim/engine/fluid_queue.h"

#include <algorithm>
#include <cmath>

#include "core/quart/mmc_model.h"

namespace sluice::sim {

double QueueWait::Tail(double x) const {
  if (!stable || x < 0)
    return 1;
  if (p_wait <= 0 || cond_mean_s <= 0)
    return 0;
  const double r = residual_s, m = excess_s;
  double cond;
  if (r <= 0) {
    cond = std::exp(-x / m);
  } else if (m <= 0) {
    cond = std::max(0.0, 1 - x / r);
  } else if (x < r) {  // P(U + E > x) = (m (1 - e^{-x/m}) + (r - x)) / r
    cond = (m * (1 - std::exp(-x / m)) + (r - x)) / r;
  } else {
    cond = m / r * (std::exp(-(x - r) / m) - std::exp(-x / m));
  }
  return p_wait * cond;
}

double QueueWait::CondQuantile(double q) const {
  return residual_s * q - excess_s * std::log(1 - q);
}

QueueWait ApproxWait(int c, double lambda, double service_s, double ca2, double cs2,
                     double batch_s) {
  QueueWait w;
  const double a = lambda * service_s;
  w.rho = c >= 1 ? a / c : 1;
  if (w.rho >= 1) {
    w.stable = false;
    w.p_wait = 1;
    return w;
  }
  w.p_wait = core::ErlangC(c, a);
  w.cond_mean_s = (ca2 + cs2) / 2 * service_s / (c * (1 - w.rho));
  w.mean_wait_s = w.p_wait * w.cond_mean_s;
  w.residual_s = std::min(std::max(batch_s, 0.0), 2 * w.cond_mean_s);
  w.excess_s = w.cond_mean_s - w.residual_s / 2;
  return w;
}

}  // namespace sluice::sim
