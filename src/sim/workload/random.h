// Portable random numbers for workload generation: SplitMix64 seed derivation and an Rng over
// std::mt19937_64 whose uniform, normal, exponential and gamma draws are computed here, so a seed
// gives bit-identical streams across standard libraries (std:: distributions are
// implementation-defined). Used by the arrival sources. Not thread-safe (one Rng per source).
#ifndef SLUICE_SIM_WORKLOAD_RANDOM_H_
#define SLUICE_SIM_WORKLOAD_RANDOM_H_

#include <cstdint>
#include <random>

namespace sluice::sim {

// One SplitMix64 step: a bijective 64-bit mix (Steele, Lea, Flood 2014).
uint64_t SplitMix64(uint64_t x);

class Rng {
 public:
  explicit Rng(uint64_t seed) : engine_(seed) {}

  // Uniform in [0, 1), 53 random bits.
  double Uniform();
  // Uniform in (0, 1]: safe to take the logarithm of.
  double UniformPositive() { return 1.0 - Uniform(); }
  // Exponential with the given mean (> 0).
  double Exponential(double mean);
  // Standard normal (Marsaglia polar method; the second variate of each pair is discarded so the
  // stream has no hidden state besides the engine).
  double Normal();
  // Gamma(shape k > 0, scale theta > 0), mean k * theta, by Marsaglia and Tsang (2000); for k < 1
  // the boost Gamma(k + 1) * U^(1/k) is used.
  double Gamma(double shape, double scale);
  // Poisson with the given mean (>= 0): Knuth's product method below 30, else the normal
  // approximation rounded (and kept >= 0). Approximate above 30 (fluid mode's counts only).
  int64_t Poisson(double mean);

 private:
  std::mt19937_64 engine_;  // its output sequence is fixed by the C++ standard
};

// Arrivals in a window of a renewal process with inter-arrival CV `cv` whose expected count is
// `mean` (>= 0), for the engine's fluid mode: the count's variance is cv^2 x mean (the renewal
// count's asymptotic variance). cv == 1: Poisson; cv > 1: negative binomial (a Poisson of a
// Gamma-distributed mean, shape mean / (cv^2 - 1)); cv < 1: a normal of that variance, rounded
// and kept >= 0.
int64_t DrawRenewalCount(Rng& rng, double mean, double cv);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_WORKLOAD_RANDOM_H_
