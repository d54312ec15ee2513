// Fluid mode (sim_config.h: FluidConfig; approximate, opt-in): a busy function is simulated per
// sample window instead of per request while it has a warm instance holding its share. At each
// sample the window [now, now + interval) gets its arrival count, drawn from the source
// (ArrivalSource::DrawCount) or, below FluidConfig::generate_below_rps, generated from it without
// events; the count reaches the scaler at the next sample exactly as counted arrivals do. The
// active instances serve it as a GI/G/c queue (fluid_queue.h) whose server time is the batch
// latency at the instances' expected share over the batch size (FluidBatches); latencies go to a
// histogram, SLO violations are the queue's tail beyond the SLO, idle memory the time with
// nothing outstanding (M/G/inf), and the busy fraction is what co-runners see. The instances are
// placed, started, parked and drained by the same code as in exact runs; they start no work in
// the GPU share model, so a GPU whose residents are all fluid needs no vertical-controller tick.
// A window with no active instance (scaled to zero, loading, all parked) runs exactly: its
// arrivals (generated, or spread uniformly over it when drawn) take the request path (gateway,
// cold start, unpark).
#include <algorithm>
#include <cmath>
#include <vector>

#include "common/status.h"
#include "sim/engine/engine.h"
#include "sim/engine/fluid_queue.h"

namespace sluice::sim {
namespace {
// Random stream of the fluid windows' arrival times, distinct from arrivals and service.
constexpr uint64_t kFluidStream = uint64_t{3} << 32;
// Points standing for a uniform or the waiting requests' tail in the histogram.
constexpr int kPoints = 4;

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

  double Latency(int b) {
    work.batch = b;
    return work.SecondsAt(share, time_quota) * slow;
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
void RecordFluidLatencies(FunctionMetrics& metrics, const FluidWindowStats& st, double n,
                          double slo_s) {
  const QueueWait& w = st.wait;
  double over = 0;
  for (int k = 0; k < kPoints; ++k) {
    const double q = (k + 0.5) / kPoints;
    const double at = st.base_s + st.burst_s * q;
    metrics.OnFluidCompletions(at * 1000, n * (1 - w.p_wait) / kPoints);
    metrics.OnFluidCompletions((at + w.CondQuantile(q)) * 1000, n * w.p_wait / kPoints);
    over += w.Tail(slo_s - at) / kPoints;  // Tail is 1 below 0: the burst alone is over
  }
  metrics.OnFluidOverSlo(n * over);
}

// A saturated window (or one clearing a backlog): full batches, FIFO behind what is queued.
// Moves `backlog` on by the window; the window's sojourn, busy fraction and mean queue.
struct SaturatedWindow {
  double sojourn_s = 0, rho = 0, queued = 0;
};
SaturatedWindow ServeSaturated(double& backlog, const FluidWindowStats& st, double n,
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

}  // namespace

bool Engine::FluidEligible(const Function& f) const {
  if (f.is_training() || f.stage != nullptr || f.pipeline_scaled || f.hybrid != nullptr ||
      f.scaler == nullptr || f.service_rng || f.arrivals == nullptr ||
      f.model->info.kind == core::FunctionKind::kLlmInference) {
    return false;
  }
  const double rate = f.arrivals->MeanRate();
  if (rate < config_.fluid.min_mean_rps)
    return false;
  return rate < config_.fluid.generate_below_rps ||
         f.arrivals->DrawCount(start_, start_).has_value();  // an empty window: a probe
}

void Engine::InitFluid() {
  if (!config_.fluid.enabled)
    return;
  fluid_rng_.emplace(DeriveSeed(config_.seed, kFluidStream));
  for (size_t i = 0; i < fns_.size(); ++i) {
    if (FluidEligible(fns_[i])) {
      fns_[i].fluid = true;
      fns_[i].fluid_generated = fns_[i].arrivals->MeanRate() < config_.fluid.generate_below_rps;
      fluid_fns_.push_back(static_cast<int>(i));
    }
  }
}

void Engine::FluidWindows() {
  const absl::Time now = env_.Now();
  if (now >= horizon_ || after_horizon_)
    return;
  fluid_rho_.resize(instances_.size(), -1.0);
  const absl::Time end = std::min(now + config_.sample_interval, horizon_);
  for (int fn : fluid_fns_)
    FluidWindow(fn, end);
}

void Engine::FluidWindow(int fn, absl::Time end) {
  Function& f = fns_[fn];
  const absl::Time now = env_.Now();
  std::vector<int32_t> active;
  for (int32_t id : f.deployed) {
    const Instance& inst = *instances_[id];
    if (inst.state() == InstanceState::kWarm && !inst.parked)
      active.push_back(id);
  }
  f.fluid_queued = 0;
  const int64_t n = TakeWindowArrivals(fn, end, /*times=*/active.empty());
  if (active.empty()) {  // the exact request path for this window
    f.metrics.OnDrop(std::llround(f.fluid_backlog));
    f.fluid_backlog = 0;
    ScheduleFluidArrival(fn);
    return;
  }
  f.interval_arrivals += n;
  f.metrics.OnArrivals(n);
  if (n > 0 && !f.sampled) {
    f.sampled = true;
    sample_adds_.push_back(fn);
  }
  if (n > 0 || f.fluid_backlog > 0)
    ServeFluid(fn, active, n, absl::ToDoubleSeconds(end - now));
}

int64_t Engine::TakeWindowArrivals(int fn, absl::Time end, bool times) {
  Function& f = fns_[fn];
  f.fluid_pending.clear();
  f.fluid_next = 0;
  if (f.fluid_generated) {
    // next_arrival holds the first arrival at or after the window (primed on the first call).
    if (!f.fluid_next_primed) {
      f.next_arrival = f.arrivals->Next();
      f.fluid_next_primed = true;
    }
    int64_t n = 0;
    while (f.next_arrival && f.next_arrival->at < end) {
      ++n;
      if (times)
        f.fluid_pending.push_back(f.next_arrival->at);
      f.next_arrival = f.arrivals->Next();
    }
    return n;
  }
  const absl::Time now = env_.Now();
  const int64_t n = f.arrivals->DrawCount(now, end).value_or(0);
  if (times) {
    const double span_s = absl::ToDoubleSeconds(end - now);
    for (int64_t k = 0; k < n; ++k)
      f.fluid_pending.push_back(now + absl::Seconds(span_s * fluid_rng_->Uniform()));
    std::sort(f.fluid_pending.begin(), f.fluid_pending.end());
  }
  return n;
}

// What a sample sees queued of a fluid function at an instant: a Poisson draw around the last
// window's mean (the exact engine's instantaneous count fluctuates so, and concurrency-driven
// scalers react to its spikes), plus the backlog.
int Engine::FluidQueuedNow(const Function& f) {
  return static_cast<int>(fluid_rng_->Poisson(f.fluid_queued) + std::llround(f.fluid_backlog));
}

void Engine::ScheduleFluidArrival(int fn) {
  Function& f = fns_[fn];
  if (f.fluid_next >= f.fluid_pending.size())
    return;
  env_.RunAt(f.fluid_pending[f.fluid_next], [this, fn] {
    Function& g = fns_[fn];
    const absl::Time at = g.fluid_pending[g.fluid_next++];
    OnArrival(fn, Arrival{.at = at});
    ScheduleFluidArrival(fn);
  });
}

double Engine::FluidShare(const Instance& inst, double* slow) const {
  const core::GpuId g = inst.gpus().front();
  const int32_t self = static_cast<int32_t>(inst.id().value());
  double others = 0;  // co-runners' expected SM-time (share x time quota)
  for (int32_t j : shares_.residents(g)) {
    if (j == self)
      continue;
    const core::SmQuota& q = shares_.quota(j);
    const double rho = static_cast<size_t>(j) < fluid_rho_.size() && fluid_rho_[j] >= 0
                           ? fluid_rho_[j]
                           : (shares_.busy(j) ? 1.0 : 0.0);
    others += rho * std::min(q.request, q.limit) * q.time_quota;
  }
  // Work conservation splits the GPU among the busy residents in proportion to their requests
  // (ComputeShares); latency goes as 1 / share, so the share that gives the mean batch time is
  // the harmonic mean over which co-runners are busy: request / (request + others).
  const core::SmQuota& q = inst.quota;
  double s = std::min(q.request, q.limit);
  if (policy_->work_conserving() && s > 0)
    s = std::clamp(s / (s * q.time_quota + others), s, q.limit);
  *slow = perf_.InterferenceSlowdown(std::min(1.0, others));
  return std::max(s, 1e-3);
}

// Serves `n` arrivals of a window of `window_s` seconds on the `active` instances (see the file
// comment and FluidBatches above).
void Engine::ServeFluid(int fn, const std::vector<int32_t>& active, int64_t n, double window_s) {
  Function& f = fns_[fn];
  const int c = static_cast<int>(active.size());
  FluidBatches m;
  m.work.model = f.model->latency;
  m.time_quota = f.quota.time_quota;
  for (int32_t id : active) {
    double sl = 1;
    m.share += FluidShare(*instances_[id], &sl) / c;
    m.slow += sl / c;
  }
  m.share = std::min(1.0, m.share);
  const double lambda = static_cast<double>(n) / window_s;
  // Bursts: a compound Poisson process of geometric clusters of mean size m has an index of
  // dispersion 2m - 1; matching a renewal process's (CV^2) gives m = (CV^2 + 1) / 2.
  const double cv = f.arrivals->InterArrivalCv();
  const double burst = cv > 1 ? (cv * cv + 1) / 2 : 1.0;
  const FluidWindowStats st =
      m.Solve(c, lambda, absl::ToDoubleSeconds(f.config->max_queue_delay), f.max_batch, burst);
  const double slo_s = absl::ToDoubleSeconds(f.config->slo);
  const double nd = static_cast<double>(n);
  double rho = 0, sojourn = 0;
  if (f.fluid_backlog > 0 || !st.stable) {
    const SaturatedWindow w = ServeSaturated(f.fluid_backlog, st, nd, window_s);
    f.metrics.OnFluidCompletions(w.sojourn_s * 1000, nd);
    f.metrics.OnFluidOverSlo(w.sojourn_s > slo_s ? nd : 0.0);
    f.fluid_queued = w.queued;
    rho = w.rho;
    sojourn = w.sojourn_s;
  } else {
    RecordFluidLatencies(f.metrics, st, nd, slo_s);
    // Requests sitting in queues at an instant: those forming a batch, behind their burst's
    // earlier batches or waiting for a busy instance (Little's law).
    f.fluid_queued = st.lambda * (st.form_s + st.burst_s / 2 + st.wait.mean_wait_s);
    rho = st.busy;
    sojourn = st.base_s + st.burst_s / 2 + st.wait.mean_wait_s;
  }
  FluidIdle(active, st.lambda / c, sojourn, rho, window_s);
}

// Idle memory: an instance has nothing outstanding a fraction exp(-lambda_i x sojourn) of the
// window (M/G/inf); it counts as busy first, idle after (idle_since moves into the window).
void Engine::FluidIdle(const std::vector<int32_t>& active, double li, double sojourn, double rho,
                       double window_s) {
  const absl::Time now = env_.Now();
  const double idle = rho >= 1 ? 0.0 : std::exp(-li * sojourn);
  const absl::Time busy_until = now + absl::Seconds(window_s * (1 - idle));
  for (int32_t id : active) {
    fluid_rho_[id] = rho;
    Instance& inst = *instances_[id];
    if (inst.outstanding() != 0)
      continue;  // exact requests still on it: the request path keeps its idle time
    CountIdle(inst, now);
    inst.idle_since = std::max(inst.idle_since, busy_until);
  }
}

}  // namespace sluice::sim
