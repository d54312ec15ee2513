// A tandem of FIFO G/G/c stages simulated request by request, for tests that need per-stage
// arrival-CV series (the CV predictor comparison, docs/quart.md). Test-only (core stays pure:
// this is a deterministic function of its seed). Thread-compatible.
#ifndef SLUICE_CORE_QUART_TESTING_TANDEM_QUEUE_H_
#define SLUICE_CORE_QUART_TESTING_TANDEM_QUEUE_H_

#include <cstdint>
#include <random>
#include <vector>

namespace sluice::core::testing {

struct TandemStage {
  int servers = 1;
  double service_rps = 1;  // per server
  double service_cv = 0.2;
};

// One window of `window` consecutive arrivals at one stage.
struct StageWindow {
  double arrival_cv = 0;   // CV of the window's inter-arrival gaps
  double rate = 0;         // arrivals per second over the window
  double utilisation = 0;  // rate / (servers x service_rps), clipped to [0, 1]
};

// A draw with mean `mean` and coefficient of variation `cv`: gamma for cv < 1, exponential at
// 1, balanced-means two-phase hyperexponential above.
double DrawWithCv(std::mt19937_64& rng, double mean, double cv);

// Simulates `requests` renewal arrivals (rate `entry_rps`, inter-arrival CV `entry_cv`) through
// `stages` in order; windows[i][w] describes the w-th run of `window` arrivals at stage i.
std::vector<std::vector<StageWindow>> SimulateTandem(const std::vector<TandemStage>& stages,
                                                     double entry_rps, double entry_cv,
                                                     int requests, int window, uint64_t seed);

}  // namespace sluice::core::testing

#endif  // SLUICE_CORE_QUART_TESTING_TANDEM_QUEUE_H_
