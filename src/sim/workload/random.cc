// Marsaglia-Tsang gamma and polar normal on top of mt19937_64's standardised output.
#include "sim/workload/random.h"

#include <algorithm>
#include <cmath>

namespace sluice::sim {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

double Rng::Uniform() {
  // The top 53 bits scaled by 2^-53: exact, and identical on every platform.
  return static_cast<double>(engine_() >> 11) * 0x1.0p-53;
}

double Rng::Exponential(double mean) {
  return -std::log(UniformPositive()) * mean;
}

double Rng::Normal() {
  while (true) {
    const double u = 2.0 * Uniform() - 1.0;
    const double v = 2.0 * Uniform() - 1.0;
    const double s = u * u + v * v;
    if (s > 0.0 && s < 1.0) {
      return u * std::sqrt(-2.0 * std::log(s) / s);
    }
  }
}

double Rng::Gamma(double shape, double scale) {
  if (shape < 1.0) {
    // Gamma(k) = Gamma(k + 1) * U^(1/k); computed in log space so tiny shapes (cv = 6 gives
    // k = 1/36) underflow only when the true value is below the smallest double.
    const double g = Gamma(shape + 1.0, 1.0);
    return std::exp(std::log(g) + std::log(UniformPositive()) / shape) * scale;
  }
  const double d = shape - 1.0 / 3.0;
  const double c = 1.0 / std::sqrt(9.0 * d);
  while (true) {
    double x;
    double v;
    do {
      x = Normal();
      v = 1.0 + c * x;
    } while (v <= 0.0);
    v = v * v * v;
    const double u = UniformPositive();
    const double x2 = x * x;
    if (u < 1.0 - 0.0331 * x2 * x2) {
      return d * v * scale;
    }
    if (std::log(u) < 0.5 * x2 + d * (1.0 - v + std::log(v))) {
      return d * v * scale;
    }
  }
}

int64_t Rng::Poisson(double mean) {
  if (mean <= 0)
    return 0;
  if (mean < 30) {
    const double limit = std::exp(-mean);
    int64_t k = 0;
    double prod = UniformPositive();
    while (prod > limit) {
      ++k;
      prod *= UniformPositive();
    }
    return k;
  }
  return std::max<int64_t>(0, std::llround(mean + std::sqrt(mean) * Normal()));
}

int64_t DrawRenewalCount(Rng& rng, double mean, double cv) {
  if (mean <= 0)
    return 0;
  const double cv2 = cv * cv;
  if (std::abs(cv2 - 1.0) < 1e-9)
    return rng.Poisson(mean);
  if (cv2 > 1.0) {
    const double shape = mean / (cv2 - 1.0);
    return rng.Poisson(rng.Gamma(shape, mean / shape));
  }
  return std::max<int64_t>(0, std::llround(mean + cv * std::sqrt(mean) * rng.Normal()));
}

}  // namespace sluice::sim
