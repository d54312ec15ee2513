// Quiet batches (sim_config.h: SimConfig::quiet_batch_samples, on by default; exact; issue 13's
// speed target). A rarely
// invoked function stays in the sample list for its scaler's window after each arrival (40 s for
// Dilu's lazy scaler), and each of those samples is quiet: nothing arrived, nothing is queued.
// When its next arrival is known to come later (exact functions, and fluid ones whose arrivals
// are generated), nothing is outstanding, every instance is warm
// and its scaler promises k quiet samples without a decision and before its next wake-up
// (HorizontalScaler::QuietSamplesWithoutDecision), the function leaves the sample list for k
// samples; they are observed, in order and with their own times, when it is visited again (the
// sample after them; a wake-up first observes those before it). By the promise nothing would
// have been done at them. Single-threaded, as the engine.
#include <algorithm>
#include <vector>

#include "sim/engine/engine.h"

namespace sluice::sim {

// Returns true when fn leaves the sample list for a quiet batch after `last`, its quiet sample
// just observed and reconciled.
bool Engine::StartQuietBatch(int fn, const core::LoadSample& last) {
  Function& f = fns_[fn];
  const int batch = config_.quiet_batch_samples;
  if (batch <= 1 || f.scaler == nullptr || !f.gateway.held.empty())
    return false;
  // A fluid function qualifies while its arrivals are generated (next_arrival: the first not yet
  // counted into a window) and its windows have left nothing queued.
  if (f.fluid &&
      (!f.fluid_generated || !f.fluid_next_primed || f.fluid_backlog > 0 || f.fluid_queued > 0))
    return false;
  for (int32_t id : f.deployed) {
    const Instance& inst = *instances_[id];
    if (inst.state() != InstanceState::kWarm || inst.outstanding() != 0)
      return false;
  }
  const absl::Time now = last.at;
  const absl::Duration interval = config_.sample_interval;
  // Held-back samples at now + j x interval (j = 1..k) all before the next arrival, and the
  // visit after them (now + (k + 1) x interval) before the horizon.
  int64_t k = std::min<int64_t>(batch, (horizon_ - now) / interval - 2);
  if (f.next_arrival)
    k = std::min(k, (f.next_arrival->at - now - absl::Nanoseconds(1)) / interval);
  k = std::min<int64_t>(
      k, f.scaler->QuietSamplesWithoutDecision(now, interval, static_cast<int>(f.deployed.size())));
  if (k < 1)
    return false;
  f.quiet_from = now;
  f.quiet_samples = static_cast<int>(k);
  quiet_batched_samples_ += k;
  RevisitAt(fn, now + interval * (k + 1));
  return true;
}

// Observes fn's held-back quiet samples before `before`; the later ones stay held back (a wake-up
// came first) or, with `drop_rest`, are dropped (Sample visits it: its own sample supersedes
// them; only an arrival brings it back early, and none was due).
void Engine::FlushQuietSamples(int fn, absl::Time before, bool drop_rest) {
  Function& f = fns_[fn];
  core::LoadSample s;
  s.instances = static_cast<int>(f.deployed.size());
  s.capacity_rps_per_instance = f.traits.capacity_rps;
  while (f.quiet_samples > 0) {
    s.at = f.quiet_from + config_.sample_interval;
    if (s.at >= before)
      break;
    f.scaler->Observe(s);
    f.quiet_from = s.at;
    --f.quiet_samples;
  }
  if (drop_rest) {
    f.quiet_samples = 0;
    f.revisit_at = absl::InfinitePast();
  }
}

void Engine::RevisitAt(int fn, absl::Time at) {
  if (revisits_.empty()) {  // reach: a quiet batch's k + 1 samples, a fluid batch's k
    const int longest = std::max(config_.quiet_batch_samples, config_.fluid.batch_samples);
    revisits_.resize(static_cast<size_t>(longest) + 2);
  }
  fns_[fn].revisit_at = at;
  const int64_t round = (at - start_) / config_.sample_interval;
  revisits_[static_cast<size_t>(round % static_cast<int64_t>(revisits_.size()))].push_back(fn);
}

// The functions whose batch ends at this sample: back into the list (merged in function order).
void Engine::Revisits() {
  if (revisits_.empty())
    return;
  const absl::Time now = env_.Now();
  const int64_t round = (now - start_) / config_.sample_interval;
  const int64_t slots = static_cast<int64_t>(revisits_.size());
  std::vector<int>& due = revisits_[static_cast<size_t>(round % slots)];
  for (int fn : due) {
    Function& f = fns_[fn];
    if (f.revisit_at == now && !f.sampled) {
      f.sampled = true;
      sample_adds_.push_back(fn);
    }
  }
  due.clear();
}

}  // namespace sluice::sim
