// One fluid window's service model (engine fluid mode, sim_config.h: FluidConfig): the batches a
// busy function's active instances form at their mean share, the GI/G/c wait behind them, the
// latencies a window records and the saturated (backlog) case. Shared by the per-window path
// (fluid.cc) and the batched one (fluid_batch.cc). Pure values; thread-compatible.
#ifndef SLUICE_SIM_ENGINE_FLUID_WINDOW_H_
#define SLUICE_SIM_ENGINE_FLUID_WINDOW_H_

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/engine/fluid_queue.h"
#include "sim/engine/gpu_share.h"
#include "sim/engine/metrics.h"

namespace sluice::sim {

// Points standing for a uniform or the waiting requests' tail in the histogram.
inline constexpr int kFluidPoints = 4;

// One window's service of a fluid function (FluidBatches::Solve).
struct FluidWindowStats {
  bool stable = true;       // below 98 % of the capacity at full batches
  double lambda = 0;        // arrivals/s
  double cap_rps = 0;       // capacity at full batches, all instances
  double full_batch_s = 0;  // time of a full batch
  double base_s = 0;        // batch formation + the batch's own time
  double form_s = 0;        // batch formation alone
  double burst_s = 0;       // a burst's own later batches: uniform on [0, burst_s]
  double busy = 0;          // fraction of time an instance executes
  QueueWait wait;           // waiting for a busy instance
};

// Batches of a fluid function at the instances' mean share. The mean batch b adapts to the load:
// what an instance collects while the oldest request waits max_queue_delay (light load) or while
// requests queue (b = 1 + lambda_i Wq(b), a fixed point found by bisection over a fractional b,
// latency interpolated between batch sizes). Bursts: a bursty renewal process (CV > 1) brings
// clusters of (CV^2 + 1) / 2 requests at once (ServeFluid); least-loaded dispatch spreads a
// cluster over the c instances, and each instance's part k leaves in batches of up to max_batch, so
// a request rides a batch of at least min(k, max_batch) and waits for up to k / max_batch - 1 of
// its cluster's batches before it. Between clusters, arrivals count as Poisson (the burstiness
// across windows is in the window counts).
struct FluidBatches {
  WorkItem work;
  double share = 0;  // mean SM share of the active instances
  double slow = 0;   // mean interference slowdown
  double time_quota = 1;

  // Batch latency at the share above; kept per batch size (a solve asks for the same few sizes
  // dozens of times, and the model's latency is a pow or two). share, slow, time_quota and work
  // must not change after the first call.
  double Latency(int b) {
    const bool keep = b >= 0 && b < static_cast<int>(kept.size());
    if (keep && kept[b] >= 0)
      return kept[b];
    work.batch = b;
    const double l = work.SecondsAt(share, time_quota) * slow;
    if (keep)
      kept[b] = l;
    return l;
  }
  std::array<double, 33> kept = MakeUnknown();  // -1: not computed yet
  static std::array<double, 33> MakeUnknown() {
    std::array<double, 33> a;
    a.fill(-1.0);
    return a;
  }
  double LatencyAt(double b) {
    const int lo = static_cast<int>(b);
    const double l = Latency(lo);
    return b - lo < 1e-9 ? l : l + (b - lo) * (Latency(lo + 1) - l);
  }
  QueueWait WaitAt(int c, double lambda, double b) {
    const double l = LatencyAt(b);
    return ApproxWait(c, lambda, l / b, 1.0, 0.0, l);
  }
  // The mean batch (see above), at least `floor`.
  double Batch(int c, double lambda, double floor, int max_b) {
    const double li = lambda / c;
    auto gap = [&](double b) {  // > 0 while a batch of b is smaller than what queues for it
      const QueueWait q = WaitAt(c, lambda, b);
      return q.stable ? 1 + li * q.mean_wait_s - b : 1e9;
    };
    double b = floor;
    if (gap(b) <= 0)
      return b;
    if (gap(max_b) > 0)
      return max_b;
    double lo = b, hi = max_b;
    for (int it = 0; it < 14; ++it) {
      const double mid = 0.5 * (lo + hi);
      (gap(mid) > 0 ? lo : hi) = mid;
    }
    return hi;
  }
  FluidWindowStats Solve(int c, double lambda, double delay, int max_b, double cluster) {
    FluidWindowStats st;
    st.lambda = lambda;
    st.full_batch_s = Latency(max_b);
    st.cap_rps = c * max_b / st.full_batch_s;
    const double li = lambda / c;
    const double part = std::max(1.0, cluster / c);
    const double floor =
        std::clamp(std::max(1 + li * delay, part), 1.0, static_cast<double>(max_b));
    const double b = Batch(c, lambda, floor, max_b);
    st.wait = WaitAt(c, lambda, b);
    st.stable = st.wait.stable && lambda < 0.98 * st.cap_rps;
    const double lat = LatencyAt(b);
    const double close = b < max_b ? delay : std::min(delay, (max_b - 1) / std::max(li, 1e-9));
    st.form_s = close * (b + 1) / (2 * b);
    st.base_s = st.form_s + lat;
    st.burst_s = std::max(0.0, part / max_b - 1) * st.full_batch_s;
    st.busy = std::min(1.0, li * lat / b);
    return st;
  }
};

// The window's latencies into the histogram and its expected violations: base + a burst's
// earlier batches (uniform) + the wait for a busy instance (QueueWait), paired quantile by
// quantile (an upper bound on the spread).
inline void RecordFluidLatencies(FunctionMetrics& metrics, const FluidWindowStats& st, double n,
                                 double slo_s) {
  const QueueWait& w = st.wait;
  double over = 0;
  for (int k = 0; k < kFluidPoints; ++k) {
    const double q = (k + 0.5) / kFluidPoints;
    const double at = st.base_s + st.burst_s * q;
    metrics.OnFluidCompletions(at * 1000, n * (1 - w.p_wait) / kFluidPoints);
    metrics.OnFluidCompletions((at + w.CondQuantile(q)) * 1000, n * w.p_wait / kFluidPoints);
    over += w.Tail(slo_s - at) / kFluidPoints;  // Tail is 1 below 0: the burst alone is over
  }
  metrics.OnFluidOverSlo(n * over);
}

// A saturated window (or one clearing a backlog): full batches, FIFO behind what is queued.
// Moves `backlog` on by the window; the window's sojourn, busy fraction and mean queue.
struct SaturatedWindow {
  double sojourn_s = 0, rho = 0, queued = 0;
};
inline SaturatedWindow ServeSaturated(double& backlog, const FluidWindowStats& st, double n,
                                      double window_s) {
  const double before = backlog;
  backlog = std::max(0.0, before + n - st.cap_rps * window_s);
  if (backlog < 1)
    backlog = 0;
  SaturatedWindow w;
  w.queued = 0.5 * (before + backlog);
  w.sojourn_s = st.full_batch_s + w.queued / st.cap_rps;
  w.rho = std::min(1.0, (before + n) / (st.cap_rps * window_s));
  return w;
}

// What a served window leaves behind: the mean queue a sample sees, the busy fraction, the mean
// sojourn, and whether it ran saturated (then already recorded).
struct FluidServed {
  double queued = 0;
  double rho = 0;
  double sojourn_s = 0;
  bool saturated = false;
};

// A batch of fluid windows served so far (fluid_batch.cc): the distinct counts of its stable
// windows with how many windows had each, their queue solutions, idle seconds, busy fractions
// summed, arrivals.
struct FluidBatchTally {
  std::vector<std::pair<int64_t, int>> counts;
  std::vector<FluidWindowStats> solved;
  double idle_s = 0;
  double rho_sum = 0;
  int64_t arrivals = 0;
};

// Idle memory: an instance has nothing outstanding a fraction exp(-lambda_i x sojourn) of a
// window (M/G/inf), `li` its arrivals/s.
inline double FluidIdleFraction(double li, double sojourn_s, double rho) {
  return rho >= 1 ? 0.0 : std::exp(-li * sojourn_s);
}

}  // namespace sluice::sim

#endif  // SLUICE_SIM_ENGINE_FLUID_WINDOW_H_
