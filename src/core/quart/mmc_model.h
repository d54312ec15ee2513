// The M/M/c queueing model QUART's corrector uses per pipeline stage (§5.1, Eq. 1): Erlang C
// waiting probability, mean wait and sojourn, and the replicas a stage needs for a latency target.
// Used by key_stage.h, cv_smoother.h, cpu_compensator.h and QuartScaler. Pure functions.
#ifndef SLUICE_CORE_QUART_MMC_MODEL_H_
#define SLUICE_CORE_QUART_MMC_MODEL_H_

#include "absl/time/time.h"

namespace sluice::core {

// One stage as an M/M/c queue: Poisson arrivals at `arrival_rps`, `replicas` servers each
// completing `service_rps` requests/s (exponential service).
struct MmcResult {
  double utilisation = 0;       // rho = lambda / (c mu); >= 1 means unstable
  double wait_probability = 0;  // Erlang C: P(an arrival waits), in [0, 1]; 1 when unstable
  absl::Duration mean_wait;     // W_q = C / (c mu - lambda); InfiniteDuration when unstable
  absl::Duration mean_sojourn;  // W_q + 1 / mu; InfiniteDuration when unstable
  bool stable = true;
};

// Erlang C probability of waiting with `servers` >= 1 servers and offered load `offered_load`
// = lambda / mu >= 0 (Erlangs). Computed through the Erlang B recursion, so it is exact and free
// of factorial overflow for any number of servers. Returns 1 when offered_load >= servers and 0
// when servers < 1 is passed with no load; non-finite or negative load counts as 0.
// Property-tested: in [0, 1], non-increasing in servers, non-decreasing in load.
double ErlangC(int servers, double offered_load);

// The M/M/c figures for one stage. `service_rps` <= 0 or `replicas` < 1 makes the stage unstable
// (infinite wait) unless `arrival_rps` is 0. Negative or non-finite arrival rates count as 0.
// The paper's Eq. 1 prints W_q as P0 lambda / (r mu (mu - lambda / r)); that is not the M/M/c
// wait (it drops the (c rho)^c / c! factor of the Erlang C numerator and has the wrong
// denominator), so this uses the textbook W_q = C(c, a) / (c mu - lambda) (docs/quart.md).
MmcResult MmcQueue(double arrival_rps, double service_rps, int replicas);

// Allen-Cunneen's G/G/c approximation: the M/M/c wait scaled by (ca^2 + cs^2) / 2, where ca and
// cs are the coefficients of variation of inter-arrival and service times (both 1 gives M/M/c).
// Used where the measured arrival CV is known (the smoother); returns the sojourn time.
absl::Duration GgcSojourn(double arrival_rps, double service_rps, int replicas, double arrival_cv,
                          double service_cv);

// The fewest replicas in [1, max_replicas] whose G/G/c sojourn (Allen-Cunneen, CVs as above) is
// at most `target_sojourn`; max_replicas when none reaches it (the caller's bound wins). A target
// at or below the bare service time 1 / mu is unreachable by replicas and also gives
// max_replicas, except that an idle stage (arrival 0) needs 1. Precondition: max_replicas >= 1.
int ReplicasForTarget(double arrival_rps, double service_rps, absl::Duration target_sojourn,
                      int max_replicas, double arrival_cv = 1.0, double service_cv = 1.0);

}  // namespace sluice::core

#endif  // SLUICE_CORE_QUART_MMC_MODEL_H_
