// M/M/c figures by the Erlang B recursion (see mmc_model.h).
#include "core/quart/mmc_model.h"

#include <algorithm>
#include <cmath>

namespace sluice::core {
namespace {

double Sanitise(double x) {
  return std::isfinite(x) && x > 0 ? x : 0.0;
}

}  // namespace

double ErlangC(int servers, double offered_load) {
  const double a = Sanitise(offered_load);
  if (a == 0)
    return 0.0;
  if (servers < 1 || a >= servers)
    return 1.0;
  // B(0) = 1, B(k) = a B(k-1) / (k + a B(k-1)): each step stays in (0, 1], no factorials.
  double b = 1.0;
  for (int k = 1; k <= servers; ++k)
    b = a * b / (k + a * b);
  const double c = servers;
  const double erlang_c = c * b / (c - a * (1.0 - b));
  return std::clamp(erlang_c, 0.0, 1.0);
}

MmcResult MmcQueue(double arrival_rps, double service_rps, int replicas) {
  MmcResult r;
  const double lambda = Sanitise(arrival_rps);
  const double mu = Sanitise(service_rps);
  if (lambda == 0) {
    r.mean_wait = absl::ZeroDuration();
    r.mean_sojourn = mu > 0 ? absl::Seconds(1.0 / mu) : absl::InfiniteDuration();
    r.stable = mu > 0;
    return r;
  }
  if (mu == 0 || replicas < 1 || lambda >= replicas * mu) {
    r.utilisation = mu > 0 && replicas >= 1 ? lambda / (replicas * mu) : INFINITY;
    r.wait_probability = 1.0;
    r.mean_wait = absl::InfiniteDuration();
    r.mean_sojourn = absl::InfiniteDuration();
    r.stable = false;
    return r;
  }
  r.utilisation = lambda / (replicas * mu);
  r.wait_probability = ErlangC(replicas, lambda / mu);
  r.mean_wait = absl::Seconds(r.wait_probability / (replicas * mu - lambda));
  r.mean_sojourn = r.mean_wait + absl::Seconds(1.0 / mu);
  return r;
}

absl::Duration GgcSojourn(double arrival_rps, double service_rps, int replicas, double arrival_cv,
                          double service_cv) {
  const MmcResult m = MmcQueue(arrival_rps, service_rps, replicas);
  if (!m.stable)
    return absl::InfiniteDuration();
  const double ca = Sanitise(arrival_cv);
  const double cs = Sanitise(service_cv);
  const double factor = (ca * ca + cs * cs) / 2.0;
  return m.mean_wait * factor + (m.mean_sojourn - m.mean_wait);
}

int ReplicasForTarget(double arrival_rps, double service_rps, absl::Duration target_sojourn,
                      int max_replicas, double arrival_cv, double service_cv) {
  const double lambda = Sanitise(arrival_rps);
  const double mu = Sanitise(service_rps);
  if (lambda == 0)
    return 1;
  if (mu == 0 || target_sojourn <= absl::Seconds(1.0 / mu))
    return max_replicas;
  // Start at the fewest stable replicas; the sojourn is non-increasing in c from there.
  // (In double first: an absurd rate must not overflow the int.)
  const double fewest_stable = std::floor(lambda / mu) + 1;
  if (fewest_stable > max_replicas)
    return max_replicas;
  int c = std::max(1, static_cast<int>(fewest_stable));
  for (; c <= max_replicas; ++c) {
    if (GgcSojourn(lambda, mu, c, arrival_cv, service_cv) <= target_sojourn)
      return c;
  }
  return max_replicas;
}

}  // namespace sluice::core
