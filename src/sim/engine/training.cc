// Training jobs: one instance holding `workers` GPUs (placed as one multi-GPU demand), iterating
// back to back. A data-parallel step ends when its slowest worker ends: the fluid model advances
// a multi-GPU instance at its slowest shard's rate. Released at job end; not SLO-sensitive.
#include "absl/strings/str_format.h"

#include "common/status.h"
#include "sim/engine/engine.h"

namespace sluice::sim {

void Engine::SubmitTraining(int fn) {
  Function& f = fns_[fn];
  Training& t = f.training;
  if (t.placed)
    return;
  const bool initial = env_.Now() == start_;
  absl::Status s = PlaceInstance(fn, initial);
  if (absl::IsResourceExhausted(s)) {
    Log(fn, "place_failed training workers=", f.config->training->workers);
    env_.RunAfter(config_.sample_interval, [this, fn] { SubmitTraining(fn); });
    return;
  }
  if (!s.ok()) {
    Fail(std::move(s));
    return;
  }
  t.placed = true;
  t.instance = static_cast<int32_t>(instances_.size() - 1);
}

void Engine::StartIteration(Instance& inst) {
  const Function& f = fns_[inst.function()];
  WorkItem w;
  w.kind = WorkItem::Kind::kIteration;
  w.model = f.model->latency;
  inst.set_executing(true);
  shares_.Start(static_cast<int32_t>(inst.id().value()), w);
  for (core::GpuId g : inst.gpus())
    vertical_->OnWorkStarted(g);
}

void Engine::FinishIteration(Instance& inst) {
  const int fn = inst.function();
  Function& f = fns_[fn];
  Training& t = f.training;
  ++t.iterations;
  if (t.iterations < f.config->training->iterations) {
    StartIteration(inst);
    return;
  }
  t.done = true;
  const absl::Time now = env_.Now();
  const double run_s = absl::ToDoubleSeconds(now - inst.warm_at);
  const double jct_s = absl::ToDoubleSeconds(now - t.submitted);
  f.metrics.SetTraining(run_s > 0 ? static_cast<double>(t.iterations) / run_s : 0, jct_s);
  Log(fn, "train_done inst=", inst.id().value(), " iters=", t.iterations,
      absl::StrFormat(" jct_s=%.6f", jct_s));
  Drain(static_cast<int32_t>(inst.id().value()));
}

// At the end of the run: an unfinished job reports its iteration rate so far and no JCT.
void Engine::SummarizeTraining(int fn) {
  Function& f = fns_[fn];
  const Training& t = f.training;
  if (t.done || !t.placed)
    return;
  const Instance& inst = *instances_[t.instance];
  if (inst.state() != InstanceState::kWarm)
    return;
  const double run_s = absl::ToDoubleSeconds(env_.Now() - inst.warm_at);
  f.metrics.SetTraining(run_s > 0 ? static_cast<double>(t.iterations) / run_s : 0, 0);
}

}  // namespace sluice::sim
