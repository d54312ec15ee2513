// Tandem G/G/c simulation (see tandem_queue.h).
#include "core/quart/testing/tandem_queue.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>

namespace sluice::core::testing {
namespace {

// Window statistics of sorted arrival times.
std::vector<StageWindow> Windows(const std::vector<double>& t, const TandemStage& s, int window) {
  std::vector<StageWindow> out;
  for (size_t start = 0; start + window <= t.size(); start += window) {
    double sum = 0, sum2 = 0;
    const int gaps = window - 1;
    for (int k = 1; k < window; ++k) {
      const double g = t[start + k] - t[start + k - 1];
      sum += g;
      sum2 += g * g;
    }
    const double mean = sum / gaps;
    const double var = std::max(0.0, sum2 / gaps - mean * mean);
    StageWindow w;
    w.arrival_cv = mean > 0 ? std::sqrt(var) / mean : 0;
    w.rate = mean > 0 ? 1.0 / mean : 0;
    w.utilisation = std::min(1.0, w.rate / (s.servers * s.service_rps));
    out.push_back(w);
  }
  return out;
}

}  // namespace

double DrawWithCv(std::mt19937_64& rng, double mean, double cv) {
  if (cv < 1) {
    const double k = 1.0 / std::max(1e-6, cv * cv);
    return std::gamma_distribution<double>(k, mean / k)(rng);
  }
  const double c2 = cv * cv;
  const double p = 0.5 * (1 + std::sqrt((c2 - 1) / (c2 + 1)));
  const bool first = std::uniform_real_distribution<double>(0, 1)(rng) < p;
  const double rate = first ? 2 * p / mean : 2 * (1 - p) / mean;
  return std::exponential_distribution<double>(rate)(rng);
}

std::vector<std::vector<StageWindow>> SimulateTandem(const std::vector<TandemStage>& stages,
                                                     double entry_rps, double entry_cv,
                                                     int requests, int window, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> arrivals(requests);
  double t = 0;
  for (double& a : arrivals) {
    t += DrawWithCv(rng, 1.0 / entry_rps, entry_cv);
    a = t;
  }
  std::vector<std::vector<StageWindow>> out;
  for (const TandemStage& s : stages) {
    out.push_back(Windows(arrivals, s, window));
    // FIFO over `servers`: each request starts when it has arrived and a server is free.
    std::priority_queue<double, std::vector<double>, std::greater<>> free;
    for (int k = 0; k < s.servers; ++k)
      free.push(0.0);
    std::vector<double> departures;
    departures.reserve(arrivals.size());
    for (double a : arrivals) {
      const double start = std::max(a, free.top());
      free.pop();
      const double done = start + DrawWithCv(rng, 1.0 / s.service_rps, s.service_cv);
      free.push(done);
      departures.push_back(done);
    }
    std::sort(departures.begin(), departures.end());
    arrivals = std::move(departures);
  }
  return out;
}

}  // namespace sluice::core::testing
