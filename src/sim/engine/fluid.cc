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
#include "sim/engine/fluid_window.h"

namespace sluice::sim {
namespace {
// Random stream of the fluid windows' arrival times, distinct from arrivals and service.
constexpr uint64_t kFluidStream = uint64_t{3} << 32;
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
  if (config_.fluid.draw_thread && !fluid_fns_.empty())
    StartDrawThread();
}

// Fluid sources are asked only for windows on the sample grid (generated: Next(), in order), so a
// helper thread can draw them ahead (sim/workload/prefetch.h).
void Engine::StartDrawThread() {
  prefetch_ = std::make_unique<ArrivalPrefetcher>();
  for (int fn : fluid_fns_) {
    Function& f = fns_[fn];
    auto wrapped = f.fluid_generated
                       ? std::make_unique<PrefetchedSource>(std::move(f.arrivals))
                       : std::make_unique<PrefetchedSource>(std::move(f.arrivals), start_,
                                                            config_.sample_interval, horizon_);
    prefetch_->Add(wrapped.get());
    f.arrivals = std::move(wrapped);
  }
  prefetch_->Start();
}

void Engine::FluidWindows() {
  const absl::Time now = env_.Now();
  if (now >= horizon_ || after_horizon_)
    return;
  fluid_rho_.resize(instances_.size(), -1.0);
  if (config_.fluid.batch_samples > 1) {
    FluidBatchRound();
    return;
  }
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
  const int64_t n = TakeWindowArrivals(fn, now, end, /*times=*/active.empty());
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

void Engine::PrimeFluidArrivals(Function& f) {
  if (!f.fluid_next_primed) {
    f.next_arrival = f.arrivals->Next();
    f.fluid_next_primed = true;
  }
}

int64_t Engine::TakeWindowArrivals(int fn, absl::Time from, absl::Time end, bool times) {
  Function& f = fns_[fn];
  f.fluid_pending.clear();
  f.fluid_next = 0;
  if (f.fluid_generated) {
    // next_arrival holds the first arrival at or after the window (primed on the first call).
    PrimeFluidArrivals(f);
    int64_t n = 0;
    while (f.next_arrival && f.next_arrival->at < end) {
      ++n;
      if (times)
        f.fluid_pending.push_back(f.next_arrival->at);
      f.next_arrival = f.arrivals->Next();
    }
    return n;
  }
  const int64_t n = f.arrivals->DrawCount(from, end).value_or(0);
  if (times) {
    const double span_s = absl::ToDoubleSeconds(end - from);
    for (int64_t k = 0; k < n; ++k)
      f.fluid_pending.push_back(from + absl::Seconds(span_s * fluid_rng_->Uniform()));
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

// The service model of `active` instances of f at their expected share (see the file comment).
FluidBatches Engine::FluidModel(const Function& f, const std::vector<int32_t>& active) const {
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
  return m;
}

FluidWindowStats Engine::SolveFluid(const Function& f, FluidBatches& m, int c,
                                    double lambda) const {
  // Bursts: a compound Poisson process of geometric clusters of mean size m has an index of
  // dispersion 2m - 1; matching a renewal process's (CV^2) gives m = (CV^2 + 1) / 2.
  const double cv = f.arrivals->InterArrivalCv();
  const double burst = cv > 1 ? (cv * cv + 1) / 2 : 1.0;
  return m.Solve(c, lambda, absl::ToDoubleSeconds(f.config->max_queue_delay), f.max_batch, burst);
}

// A window of `n` arrivals served as `st` says: saturated (FIFO behind the backlog, recorded
// here) or stable (recorded by the caller, RecordFluidLatencies, so that equal windows of a batch
// record once). Moves the backlog on.
FluidServed Engine::ServeWindow(Function& f, const FluidWindowStats& st, int64_t n,
                                double window_s) {
  const double nd = static_cast<double>(n);
  FluidServed out;
  if (f.fluid_backlog > 0 || !st.stable) {
    const SaturatedWindow w = ServeSaturated(f.fluid_backlog, st, nd, window_s);
    f.metrics.OnFluidCompletions(w.sojourn_s * 1000, nd);
    f.metrics.OnFluidOverSlo(w.sojourn_s > absl::ToDoubleSeconds(f.config->slo) ? nd : 0.0);
    out.queued = w.queued;
    out.rho = w.rho;
    out.sojourn_s = w.sojourn_s;
    out.saturated = true;
    return out;
  }
  // Requests sitting in queues at an instant: those forming a batch, behind their burst's
  // earlier batches or waiting for a busy instance (Little's law).
  out.queued = st.lambda * (st.form_s + st.burst_s / 2 + st.wait.mean_wait_s);
  out.rho = st.busy;
  out.sojourn_s = st.base_s + st.burst_s / 2 + st.wait.mean_wait_s;
  return out;
}

// Serves `n` arrivals of a window of `window_s` seconds on the `active` instances.
void Engine::ServeFluid(int fn, const std::vector<int32_t>& active, int64_t n, double window_s) {
  Function& f = fns_[fn];
  const int c = static_cast<int>(active.size());
  FluidBatches m = FluidModel(f, active);
  const FluidWindowStats st = SolveFluid(f, m, c, static_cast<double>(n) / window_s);
  const FluidServed w = ServeWindow(f, st, n, window_s);
  if (!w.saturated)
    RecordFluidLatencies(f.metrics, st, static_cast<double>(n),
                         absl::ToDoubleSeconds(f.config->slo));
  f.fluid_queued = w.queued;
  const double li = st.lambda / c;
  FluidIdle(active, w.rho, window_s * FluidIdleFraction(li, w.sojourn_s, w.rho), window_s);
}

// Of `window_s` seconds from now, `idle_s` without anything outstanding: they count as busy
// first, idle after (idle_since moves into the window). `rho` is what co-runners see.
void Engine::FluidIdle(const std::vector<int32_t>& active, double rho, double idle_s,
                       double window_s) {
  const absl::Time now = env_.Now();
  const absl::Time busy_until = now + absl::Seconds(std::max(0.0, window_s - idle_s));
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
