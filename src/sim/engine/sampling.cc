// Horizontal scaling's loop: the periodic load samples that feed each function's
// HorizontalScaler (or HybridScaler, hybrid.cc), idle functions skipped while a sample cannot
// change a decision (QuietSampleIsNoOp), the reconciliation of the deployed (and parked) count
// with Desired() / ActiveWanted(), and scaler wake-ups. Single-threaded, as the engine.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <vector>

#include "absl/strings/str_format.h"

#include "common/status.h"
#include "core/longtail/parking.h"
#include "core/serving/scale_in.h"
#include "sim/engine/engine.h"
#include "sim/engine/sample_observer.h"

namespace sluice::sim {

void Engine::MergeSampleAdds() {
  if (sample_adds_.empty())
    return;
  std::sort(sample_adds_.begin(), sample_adds_.end());
  std::vector<int> merged;
  merged.reserve(sample_list_.size() + sample_adds_.size());
  std::merge(sample_list_.begin(), sample_list_.end(), sample_adds_.begin(), sample_adds_.end(),
             std::back_inserter(merged));
  sample_list_ = std::move(merged);
  sample_adds_.clear();
}

// One function's sample: the load sample to its scaler, reconciliation, its next wake-up.
// Returns whether the function may leave the sample list (nothing going on and the scaler
// skips quiet samples from the next one on).
bool Engine::SampleFunction(int fn, double rps) {
  Function& f = fns_[fn];
  if (f.trains || after_horizon_ || f.pipeline_scaled)
    return false;
  core::LoadSample s;
  s.at = env_.Now();
  if (f.fluid_batch_end > s.at)  // a fluid batch holds its samples back until its last one:
    return true;                 // out of the list until then (RevisitAt puts it back)
  if (f.quiet_samples > 0)
    FlushQuietSamples(fn, s.at, /*drop_rest=*/true);
  if (!f.fluid_samples.empty()) {
    s = FlushFluidSamples(fn, s.at, /*inclusive=*/true);  // the batch's, this one the last
  } else {
    s.rps = rps;
    s.instances = static_cast<int>(f.deployed.size());
    s.capacity_rps_per_instance = f.traits.capacity_rps;
    s.queued = static_cast<int>(f.gateway.held.size());
    for (int32_t id : f.deployed)
      s.queued += static_cast<int>(instances_[id]->queue.size());
    if (f.fluid)  // fluid mode: a snapshot of the window's mean queue (FluidQueuedNow, fluid.cc)
      s.queued += FluidQueuedNow(f);
    if (f.hybrid != nullptr) {
      f.hybrid->Observe(s);
    } else {
      f.scaler->Observe(s);
    }
  }
  Reconcile(fn);
  ScheduleWakeup(fn);
  if (f.hybrid != nullptr || f.stage != nullptr || s.rps != 0 || s.queued != 0)
    return false;
  return f.scaler->QuietSampleIsNoOp(s.at + config_.sample_interval) || StartQuietBatch(fn, s);
}

// The sample list's functions (with those back from quiet batches and arrivals merged in), in
// function order; those whose SampleFunction says so leave the list. Their rates into `rps` when
// it is sized for every function.
void Engine::SampleListed(double interval_s, std::vector<double>& rps) {
  Revisits();
  MergeSampleAdds();
  size_t kept = 0;
  for (size_t k = 0; k < sample_list_.size(); ++k) {
    const int fn = sample_list_[k];
    Function& f = fns_[fn];
    const double r = static_cast<double>(f.interval_arrivals) / interval_s;
    f.interval_arrivals = 0;
    if (!rps.empty())
      rps[fn] = r;
    if (SampleFunction(fn, r)) {
      f.sampled = false;
    } else {
      sample_list_[kept++] = fn;
    }
  }
  sample_list_.resize(kept);
}

void Engine::Sample() {
  const absl::Time now = env_.Now();
  if (const SampleObserver* observer = CurrentSampleObserver()) {  // progress display only
    (*observer)(now - start_, static_cast<int64_t>(env_.events_run()));
  }
  const double interval_s = absl::ToDoubleSeconds(config_.sample_interval);
  // Per-function timeline columns (and the rps vector the pipelines read) only for small fleets.
  const bool per_function = fns_.size() <= kTimelineFunctionColumns;
  std::vector<double> rps(per_function || !pipes_.empty() ? fns_.size() : 0, 0.0);
  SampleListed(interval_s, rps);
  SamplePipelines(rps);
  FluidWindows();  // the next window of fluid functions (no-op without any)
  double cost = 0;
  std::vector<int> counts;
  if (per_function) {
    counts.assign(fns_.size(), 0);
    for (size_t i = 0; i < fns_.size(); ++i) {
      counts[i] = static_cast<int>(fns_[i].deployed.size());
      cost += fns_[i].held.usd(now);
    }
  } else {
    cost = total_held_.usd(now);
    rps.clear();
  }
  cluster_metrics_.Sample(now, cluster_, fgd_workload_, std::move(counts), std::move(rps), cost);
  const absl::Time next = now + config_.sample_interval;
  if (next <= horizon_)
    env_.RunAt(next, [this] { Sample(); });
}

void Engine::Reconcile(int fn) {
  if (after_horizon_)
    return;
  Function& f = fns_[fn];
  if (f.hybrid != nullptr) {
    ReconcileHybrid(fn);
    return;
  }
  const int desired = std::max(0, f.scaler->Desired(env_.Now()));
  const int active = f.scaler->ActiveWanted(env_.Now());
  while (static_cast<int>(f.deployed.size()) < desired) {
    absl::Status s = PlaceInstance(fn, /*initial=*/false, /*parked=*/ActiveCount(f) >= active);
    if (absl::IsResourceExhausted(s)) {
      Log(fn, "place_failed deployed=", f.deployed.size(), " desired=", desired);
      break;
    }
    if (!s.ok()) {
      Fail(std::move(s));
      return;
    }
  }
  if (static_cast<int>(f.deployed.size()) > desired) {
    // The scale-in order the runtime controller uses too (core::PickScaleIn).
    std::vector<core::ScaleInCandidate> candidates;
    for (int32_t id : f.deployed) {
      const Instance& inst = *instances_[id];
      candidates.push_back({id, inst.state() == InstanceState::kWarm, inst.outstanding()});
    }
    const int excess = static_cast<int>(f.deployed.size()) - desired;
    for (int64_t id : core::PickScaleIn(std::move(candidates), excess))
      Drain(static_cast<int32_t>(id));
  }
  ApplyParking(fn);
}

// A function sampled every second moves its next wake-up (the park time, say) on at each sample;
// cancelling and re-adding the timer each time filled the event heap with cancelled entries. The
// timer stays armed at the earliest time asked for and, when it fires before the wake-up now
// due, re-arms for that time without reconciling: Reconcile still runs exactly at the due times.
void Engine::ScheduleWakeup(int fn) {
  Function& f = fns_[fn];
  const absl::Time now = env_.Now();
  absl::Time t = f.hybrid != nullptr ? f.hybrid->NextWakeup() : f.scaler->NextWakeup();
  if (t <= now || t >= horizon_)
    t = absl::InfiniteFuture();
  f.wakeup_due = t;
  if (t == absl::InfiniteFuture() || (f.wakeup != 0 && f.wakeup_at <= t))
    return;  // nothing due (an armed timer finds nothing and stops), or armed early enough
  if (f.wakeup != 0)
    env_.Cancel(f.wakeup);
  ArmWakeup(fn, t);
}

void Engine::ArmWakeup(int fn, absl::Time at) {
  Function& f = fns_[fn];
  f.wakeup_at = at;
  f.wakeup = env_.RunAt(at, [this, fn] {
    Function& g = fns_[fn];
    g.wakeup = 0;
    if (!g.fluid_samples.empty())  // a batch promised no wake-up within it; kept in order anyway
      FlushFluidSamples(fn, env_.Now(), /*inclusive=*/false);
    if (g.quiet_samples > 0)
      FlushQuietSamples(fn, env_.Now(), /*drop_rest=*/false);
    if (g.wakeup_due > env_.Now()) {  // moved on since the timer was armed
      if (g.wakeup_due != absl::InfiniteFuture())
        ArmWakeup(fn, g.wakeup_due);
      return;
    }
    Reconcile(fn);
    ScheduleWakeup(fn);
  });
}

}  // namespace sluice::sim
