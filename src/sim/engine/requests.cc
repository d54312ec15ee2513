// The request path: arrival -> gateway (held while no instance is warm) -> least-loaded warm
// instance -> batching (max batch size / max queue delay) -> execution in the fluid GPU model ->
// completion. Draining instances start whatever they hold at once: nothing new will join.
#include <algorithm>
#include <cmath>

#include "common/status.h"
#include "core/serving/batching.h"
#include "sim/engine/engine.h"

namespace sluice::sim {

void Engine::ScheduleNextArrival(int fn) {
  Function& f = fns_[fn];
  f.next_arrival = f.arrivals->Next();
  if (!f.next_arrival)
    return;
  // Only [this, fn] is captured so the callback fits the Env's inline storage.
  env_.RunAt(f.next_arrival->at, [this, fn] {
    OnArrival(fn, *fns_[fn].next_arrival);
    ScheduleNextArrival(fn);
  });
}

void Engine::OnArrival(int fn, const Arrival& a) {
  Function& f = fns_[fn];
  f.metrics.OnArrival();
  ++f.interval_arrivals;
  if (!f.sampled) {  // back into the sample list at the next sample
    f.sampled = true;
    sample_adds_.push_back(fn);
  }
  Request r{a.at, a.prompt_tokens, a.output_tokens};
  if (f.stage != nullptr) {  // a pipeline's first stage
    r.pipe = NewPipeRequest(a.at);
    OnStageArrival(fn);
  }
  Dispatch(fn, r);
}

void Engine::Dispatch(int fn, const Request& r) {
  Function& f = fns_[fn];
  const std::optional<int32_t> target = f.gateway.LeastLoaded();
  if (!target) {
    f.gateway.held.push_back(r);
    Waiting(fn, +1);
    if (f.deployed.empty())
      WakeFromZero(fn);
    return;
  }
  Instance& inst = *instances_[*target];
  Deliver(inst, r);
  MaybeStartBatch(inst);
}

void Engine::Enqueue(Instance& inst, const Request& r) {
  const int64_t old = inst.outstanding();
  if (old == 0)
    MarkBusy(inst);
  inst.queue.push_back(r);
  Waiting(inst.function(), +1);
  if (inst.state() == InstanceState::kWarm) {
    fns_[inst.function()].gateway.UpdateLoad(static_cast<int32_t>(inst.id().value()), old, old + 1);
  }
}

void Engine::FlushHeld(int fn) {
  Function& f = fns_[fn];
  if (f.gateway.held.empty() || f.gateway.warm_count() == 0)
    return;
  std::vector<int32_t> touched;
  while (!f.gateway.held.empty()) {
    const int32_t id = *f.gateway.LeastLoaded();
    const Request r = f.gateway.held.front();
    f.gateway.held.pop_front();
    Waiting(fn, -1);
    f.metrics.OnColdStartWait(env_.Now() - r.arrival);
    Deliver(*instances_[id], r);
    touched.push_back(id);
  }
  std::sort(touched.begin(), touched.end());
  touched.erase(std::unique(touched.begin(), touched.end()), touched.end());
  for (int32_t id : touched)
    MaybeStartBatch(*instances_[id]);
}

void Engine::MaybeStartBatch(Instance& inst) {
  if (inst.executing() || inst.queue.empty())
    return;
  const InstanceState st = inst.state();
  if (st != InstanceState::kWarm && st != InstanceState::kDraining)
    return;
  const Function& f = fns_[inst.function()];
  const absl::Time now = env_.Now();
  // A just un-parked instance starts nothing before its share is back (wake_at).
  const absl::Time due = std::max(
      inst.wake_at,
      st == InstanceState::kDraining
          ? now
          : core::BatchDueAt(now, static_cast<int64_t>(inst.queue.size()),
                             inst.queue.front().arrival, inst.max_batch, f.config->max_queue_delay));
  if (due <= now) {
    if (inst.batch_timer != 0)
      env_.Cancel(inst.batch_timer);
    inst.batch_timer = 0;
    StartBatch(inst, std::min<int64_t>(inst.max_batch, static_cast<int64_t>(inst.queue.size())));
    return;
  }
  if (inst.batch_timer != 0)
    return;  // already due at the oldest request's deadline
  const int32_t id = static_cast<int32_t>(inst.id().value());
  inst.batch_timer = env_.RunAt(due, [this, id] {
    instances_[id]->batch_timer = 0;
    MaybeStartBatch(*instances_[id]);
  });
}

void Engine::StartBatch(Instance& inst, int64_t size) {
  inst.queue.PopFront(static_cast<size_t>(size), inst.batch);
  inst.set_executing(true);
  const int32_t id = static_cast<int32_t>(inst.id().value());
  if (StageState* st = fns_[inst.function()].stage.get(); st != nullptr) {
    const absl::Time now = env_.Now();
    st->waiting.Add(now, -static_cast<double>(size));
    st->busy.Add(now, 1);
  }
  if (inst.is_cpu()) {
    StartCpuBatch(inst);
    Log(inst.function(), "batch_start inst=", id, " size=", size);
    return;
  }
  shares_.Start(id, MakeBatchWork(fns_[inst.function()], inst));
  for (core::GpuId g : inst.gpus())
    vertical_->OnWorkStarted(g);
  Log(inst.function(), "batch_start inst=", id, " size=", size);
}

WorkItem Engine::MakeBatchWork(Function& f, const Instance& inst) {
  WorkItem w;
  w.model = f.model->latency;
  w.batch = static_cast<int>(inst.batch.size());
  if (f.service_rng) {
    // Inverse transform: -mean * ln(U), U uniform in (0, 1].
    w.kind = WorkItem::Kind::kFixed;
    w.fixed_seconds = -absl::ToDoubleSeconds(*f.config->exponential_service_mean) *
                      std::log(f.service_rng->UniformPositive());
    return w;
  }
  if (f.model->info.kind != core::FunctionKind::kLlmInference)
    return w;
  w.kind = WorkItem::Kind::kLlmBatch;
  w.prompt_tokens = 0;
  w.output_tokens = 1;
  for (const Request& r : inst.batch) {
    w.prompt_tokens += r.prompt_tokens > 0 ? r.prompt_tokens : f.config->default_prompt_tokens;
    w.output_tokens = std::max(
        w.output_tokens, r.output_tokens > 0 ? r.output_tokens : f.config->default_output_tokens);
  }
  return w;
}

void Engine::OnWorkDone(int32_t id) {
  Instance& inst = *instances_[id];
  inst.set_executing(false);
  vertical_->OnIterationDone(id);  // an iteration boundary for the vertical controller
  if (fns_[inst.function()].is_training()) {
    FinishIteration(inst);
  } else {
    FinishBatch(inst);
  }
}

void Engine::FinishBatch(Instance& inst) {
  Function& f = fns_[inst.function()];
  const absl::Time now = env_.Now();
  const int64_t old = inst.outstanding();
  const int64_t n = static_cast<int64_t>(inst.batch.size());
  const int32_t id = static_cast<int32_t>(inst.id().value());
  for (const Request& r : inst.batch)
    f.metrics.OnCompletion(now - r.arrival);
  // A pipeline stage takes the batch out first: hand-offs may reach this very instance.
  RequestBatch done;
  if (f.stage != nullptr) {
    done.swap(inst.batch);
    f.stage->busy.Add(now, -1);
  } else {
    inst.batch.clear();
  }
  if (inst.state() == InstanceState::kWarm)
    f.gateway.UpdateLoad(id, old, old - n);
  Log(inst.function(), "batch_done inst=", id, " size=", n);
  for (const Request& r : done)
    StageDone(inst.function(), r, id);
  MaybeStartBatch(inst);
  if (inst.outstanding() == 0)
    MarkIdle(inst);
  if (inst.state() == InstanceState::kDraining && inst.idle())
    Retire(id);
}

void Engine::DropUnservable(int fn) {
  Function& f = fns_[fn];
  if (!f.deployed.empty() || f.gateway.held.empty())
    return;
  if (f.stage != nullptr && !f.stage->cpu_workers.empty())
    return;
  const int64_t n = static_cast<int64_t>(f.gateway.held.size());
  f.metrics.OnDrop(n);
  f.gateway.held.clear();
  Waiting(fn, -static_cast<double>(n));
  Log(fn, "drop n=", n, " reason=no_instance");
}

}  // namespace sluice::sim
