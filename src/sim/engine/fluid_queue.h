// Queueing approximations for the engine's fluid mode (sim_config.h: FluidConfig): the
// Allen-Cunneen GI/G/c waiting time (its P(wait) is core::ErlangC, core/quart/mmc_model.h),
// with an exponential tail for the fraction of requests whose wait exceeds a bound. Pure
// functions; thread-safe. Used by fluid.cc and tests.
#ifndef SLUICE_SIM_ENGINE_FLUID_QUEUE_H_
#define SLUICE_SIM_ENGINE_FLUID_QUEUE_H_

namespace sluice::sim {

// Waiting time (before service) of a GI/G/c queue by Allen-Cunneen: P(wait) =
// core::ErlangC(c, a) and, given a wait, an exponential of mean
// (ca2 + cs2) / 2 x service / (c (1 - rho)), rho = a / c.
// Exact for M/M/c (ca2 = cs2 = 1); the mean is Pollaczek-Khinchine's for M/G/1.
//
// Batching servers (`residual_s` > 0, the time of the batch in service): a waiting request waits
// for the residual of that batch, uniform on [0, r] with r = min(residual_s, 2 E[W | W > 0]),
// plus an exponential excess of mean E[W | W > 0] - r / 2 (the queue beyond one batch), so the
// mean stays Allen-Cunneen's while the tail is bounded where batches absorb the queue.
struct QueueWait {
  bool stable = true;      // rho < 1; otherwise the other fields are meaningless
  double rho = 0;          // server utilisation
  double p_wait = 0;       // probability of waiting at all
  double mean_wait_s = 0;  // E[W] over all arrivals
  double cond_mean_s = 0;  // E[W | W > 0]
  double residual_s = 0;   // r above (0: the plain exponential)
  double excess_s = 0;     // mean of the exponential part

  // P(W > x seconds); 1 for x < 0.
  double Tail(double x) const;
  // A wait standing for the q-quantile, q in (0, 1), of the requests that wait: exact for the
  // plain exponential, r q + its exponential quantile (an upper bound) with a residual.
  double CondQuantile(double q) const;
};

// `lambda` arrivals/s, `service_s` > 0 seconds per request, `c` >= 1 servers, squared CVs of the
// inter-arrival and service times; `batch_s` >= 0 the batch time of a batching server (above).
QueueWait ApproxWait(int c, double lambda, double service_s, double ca2, double cs2,
                     double batch_s = 0);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_ENGINE_FLUID_QUEUE_H_
