// Batched fluid windows (sim_config.h: FluidConfig::batch_samples > 1; issue 13's speed target).
// A busy fluid function costs a visit per sample interval: its load sample, a reconciliation, a
// wake-up, a share and queue model, histogram points. While its instances are all warm, unparked
// and free of exact requests and its scaler promises that the coming samples cannot change a
// decision whatever load they carry, given which of them carry arrivals
// (HorizontalScaler::PromiseSamples; the engine draws each window before it takes the next), the
// engine serves its next k windows in one visit: each window keeps its own count (drawn or
// generated per interval, as before), backlog, mean queue and busy fraction; the share and
// interference are taken once, and windows with equal counts share one queue solution and one
// set of histogram points. The k samples are held back (Function::fluid_samples) and observed,
// in order and with their own times, at the batch's last sample, which then reconciles once: by
// the promise that is where the unbatched run would first have acted on them (a wake-up due
// inside the batch first observes the samples before it, and then finds nothing to do). Sample
// drops the function from its list during the batch; RevisitAt puts it back for the batch's
// end. Functions are kept in a calendar by the round their next window starts at.
// Single-threaded, as the engine.
#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "sim/engine/engine.h"

namespace sluice::sim {

void Engine::FluidBatchRound() {
  const int slots = config_.fluid.batch_samples + 1;
  if (fluid_due_.empty()) {  // the first round: every fluid function starts a window
    fluid_due_.resize(slots);
    fluid_due_[0] = fluid_fns_;
  }
  const size_t slot = static_cast<size_t>(fluid_round_ % slots);
  fluid_round_fns_.swap(fluid_due_[slot]);
  fluid_due_[slot].clear();
  // Ascending, as unbatched rounds visit them: the order of draws and of co-runners' updates.
  std::sort(fluid_round_fns_.begin(), fluid_round_fns_.end());
  for (int fn : fluid_round_fns_) {
    int k = FluidIdleWindows(fn);
    if (k > 0) {
      fns_[fn].fluid_queued = 0;  // windows without arrivals: nothing to serve or sample
      fluid_skipped_windows_ += k;
    } else if (const core::HorizontalScaler::SamplePromise p = FluidBatchPromise(fn);
               p.samples > 1 && core::HorizontalScaler::SamplePromise::Cursor(p).NextAllowed()) {
      k = FluidBatch(fn, p);
      fluid_batched_windows_ += k;
    } else {
      FluidWindow(fn, std::min(env_.Now() + config_.sample_interval, horizon_));
      k = 1;
    }
    fluid_due_[static_cast<size_t>((fluid_round_ + k) % slots)].push_back(fn);
  }
  fluid_round_fns_.clear();
  ++fluid_round_;
}

// Windows from now that certainly see no arrival of fn (at most batch_samples): a generated
// function's next arrival is known. Such a window changes nothing, served or run exactly, once no
// backlog is left. 0 when unknown.
int Engine::FluidIdleWindows(int fn) {
  Function& f = fns_[fn];
  if (!f.fluid_generated || f.fluid_backlog > 0)
    return 0;
  PrimeFluidArrivals(f);
  const absl::Time now = env_.Now();
  const absl::Duration interval = config_.sample_interval;
  int64_t k = std::min<int64_t>(config_.fluid.batch_samples, (horizon_ - now) / interval);
  if (f.next_arrival)
    k = std::min(k, (f.next_arrival->at - now) / interval);
  return static_cast<int>(std::max<int64_t>(k, 0));
}

// What fn's scaler promises for its next windows (capped by batch_samples and the horizon), or
// nothing (one window, unbatched) unless every instance is warm, active and free of exact work.
core::HorizontalScaler::SamplePromise Engine::FluidBatchPromise(int fn) const {
  const Function& f = fns_[fn];
  const absl::Time now = env_.Now();
  const absl::Duration interval = config_.sample_interval;
  const int64_t to_horizon = (horizon_ - now) / interval;  // whole windows before the horizon
  const int cap = static_cast<int>(std::min<int64_t>(config_.fluid.batch_samples, to_horizon));
  if (cap <= 1 || f.deployed.empty() || !f.gateway.held.empty() || f.fluid_backlog > 0 ||
      f.quiet_samples > 0)  // a quiet batch holds its samples (quiet_batch.cc)
    return {};
  for (int32_t id : f.deployed) {
    const Instance& inst = *instances_[id];
    if (inst.state() != InstanceState::kWarm || inst.parked || inst.outstanding() != 0)
      return {};
  }
  core::HorizontalScaler::SamplePromise p =
      f.scaler->PromiseSamples(now, interval, static_cast<int>(f.deployed.size()));
  p.samples = std::min(p.samples, cap);
  p.quiet_first = std::min(p.quiet_first, p.samples);
  return p;
}

// Serves fn's next windows at once (see the file comment), as many as the promise allows given
// the windows drawn so far (PromiseSamples: the tier kept by an earlier window with arrivals, the
// lazy scaler's high and low budgets). Returns how many.
int Engine::FluidBatch(int fn, const core::HorizontalScaler::SamplePromise& p) {
  Function& f = fns_[fn];
  const absl::Time now = env_.Now();
  const absl::Duration interval = config_.sample_interval;
  const std::vector<int32_t>& active = f.deployed;  // all warm and unparked (FluidBatchPromise)
  FluidBatches m = FluidModel(f, active);
  FluidBatchTally tally;
  f.fluid_samples.clear();
  core::HorizontalScaler::SamplePromise::Cursor batch(p);
  while (batch.NextAllowed()) {
    FluidBatchWindow(fn, m, now + interval * batch.taken(), tally);
    batch.Take(f.fluid_samples.back().rps);
  }
  const int k = batch.taken();
  const double slo_s = absl::ToDoubleSeconds(f.config->slo);
  for (size_t i = 0; i < tally.counts.size(); ++i) {
    const auto [n, windows] = tally.counts[i];
    if (windows > 0)
      RecordFluidLatencies(f.metrics, tally.solved[i], static_cast<double>(n) * windows, slo_s);
  }
  f.metrics.OnArrivals(tally.arrivals);
  f.fluid_queued = f.fluid_samples.back().queued_mean;
  f.fluid_batch_end = now + interval * k;
  RevisitAt(fn, f.fluid_batch_end);  // Sample observes the held-back samples there
  FluidIdle(active, tally.rho_sum / k, tally.idle_s, absl::ToDoubleSeconds(interval) * k);
  return k;
}

// One window [from, from + interval) of a batch: its count, its service (stable windows with a
// count seen before reuse its solution and are recorded together) and its held-back sample.
void Engine::FluidBatchWindow(int fn, FluidBatches& m, absl::Time from, FluidBatchTally& tally) {
  Function& f = fns_[fn];
  const absl::Duration interval = config_.sample_interval;
  const double window_s = absl::ToDoubleSeconds(interval);
  const int c = static_cast<int>(f.deployed.size());
  const int64_t n = TakeWindowArrivals(fn, from, from + interval, /*times=*/false);
  tally.arrivals += n;
  FluidServed w;
  if (n > 0 || f.fluid_backlog > 0) {
    size_t i = 0;
    while (i < tally.counts.size() && tally.counts[i].first != n)
      ++i;
    if (i == tally.counts.size()) {
      tally.counts.emplace_back(n, 0);
      tally.solved.push_back(SolveFluid(f, m, c, static_cast<double>(n) / window_s));
    }
    w = ServeWindow(f, tally.solved[i], n, window_s);
    if (!w.saturated)
      ++tally.counts[i].second;
    tally.idle_s += window_s * FluidIdleFraction(tally.solved[i].lambda / c, w.sojourn_s, w.rho);
  } else {
    tally.idle_s += window_s;  // nothing arrived: the instances idle through the window
  }
  tally.rho_sum += w.rho;
  f.fluid_samples.push_back(
      {from + interval, static_cast<double>(n) / window_s, w.queued, f.fluid_backlog});
}

core::LoadSample Engine::FlushFluidSamples(int fn, absl::Time until, bool inclusive) {
  Function& f = fns_[fn];
  core::LoadSample s;
  size_t used = 0;
  for (; used < f.fluid_samples.size(); ++used) {
    const FluidSample& p = f.fluid_samples[used];
    if (p.at > until || (!inclusive && p.at == until))
      break;
    s.at = p.at;
    s.rps = p.rps;
    s.instances = static_cast<int>(f.deployed.size());
    s.capacity_rps_per_instance = f.traits.capacity_rps;
    s.queued = static_cast<int>(fluid_rng_->Poisson(p.queued_mean) + std::llround(p.backlog));
    f.scaler->Observe(s);
  }
  f.fluid_samples.erase(f.fluid_samples.begin(),
                        f.fluid_samples.begin() + static_cast<std::ptrdiff_t>(used));
  return s;
}

}  // namespace sluice::sim
