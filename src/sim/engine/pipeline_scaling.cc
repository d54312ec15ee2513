// Driving a policy's PipelineScaler (QUART's key-stage scaling; issue 11): every sample (and at
// the scaler's finite NextWakeup) one PipelineStageSample per stage, then Decide with the free CPU
// cores, then the per-stage deltas: GPU replicas placed through the policy's placement (with the
// stage, key-stage flag and the nodes caching the stage) or drained least loaded first, and CPU
// workers started on nodes with free cores or stopped. CPU workers serve a stage's batches one at
// a time at the GPU batch latency x cpu_slowdown.
#include <algorithm>
#include <vector>

#include "absl/strings/str_format.h"

#include "common/status.h"
#include "core/serving/scale_in.h"
#include "core/serving/scale_out.h"
#include "sim/engine/engine.h"

namespace sluice::sim {

void Engine::SamplePipelines(const std::vector<double>& rps) {
  const absl::Time now = env_.Now();
  for (size_t p = 0; p < pipes_.size(); ++p) {
    PipelineState& ps = pipes_[p];
    if (ps.scaler != nullptr && !after_horizon_) {
      std::vector<core::PipelineStageSample> samples;
      for (int fn : ps.stages)
        samples.push_back(StageSample(fn, rps[fn]));
      ps.scaler->Observe(samples, now);
      DecidePipeline(static_cast<int>(p));
    }
    for (int fn : ps.stages) {
      StageState& st = *fns_[fn].stage;
      st.gaps_window.Reset();
      st.sojourn_window = MeanAcc();
    }
  }
}

core::PipelineStageSample Engine::StageSample(int fn, double rps) {
  const Function& f = fns_[fn];
  const StageState& st = *f.stage;
  core::PipelineStageSample s;
  s.arrival_rps = rps;
  s.arrival_cv = st.gaps_window.Cv(1.0);
  s.queue_length = st.waiting.value();
  if (st.sojourn_window.n > 0)
    s.measured_latency = absl::Seconds(st.sojourn_window.Mean());
  for (int32_t id : f.deployed) {
    if (instances_[id]->state() == InstanceState::kWarm) {
      ++s.ready_replicas;
    } else {
      ++s.starting_replicas;
    }
  }
  s.cpu_workers = static_cast<int>(st.cpu_workers.size());
  return s;
}

void Engine::DecidePipeline(int p) {
  PipelineState& ps = pipes_[p];
  if (after_horizon_)
    return;
  const core::PipelineDecision d = ps.scaler->Decide(env_.Now(), FreeCpuCores());
  if (d.stages.size() != ps.stages.size()) {
    Fail(absl::InternalError(absl::StrCat("pipeline scaler ", std::string(ps.scaler->name()),
                                          " decided ", d.stages.size(), " stages of pipeline ",
                                          ps.config->name, ", which has ", ps.stages.size())));
    return;
  }
  for (size_t j = 0; j < ps.stages.size(); ++j) {
    StageState& st = *fns_[ps.stages[j]].stage;
    st.key = d.stages[j].key || std::find(d.key_stages.begin(), d.key_stages.end(),
                                          static_cast<int>(j)) != d.key_stages.end();
    st.key_ever = st.key_ever || st.key;
  }
  ApplyPipelineDecision(ps.stages, d);
  SchedulePipelineWakeup(p);
}

void Engine::SchedulePipelineWakeup(int p) {
  PipelineState& ps = pipes_[p];
  const absl::Time now = env_.Now();
  const absl::Time t = ps.scaler->NextWakeup();
  if (ps.wakeup != 0)
    env_.Cancel(ps.wakeup);
  ps.wakeup = 0;
  if (t == absl::InfiniteFuture() || t <= now || t >= horizon_)
    return;
  ps.wakeup = env_.RunAt(t, [this, p] {
    pipes_[p].wakeup = 0;
    DecidePipeline(p);
  });
}

// Scale-ins first (their GPUs go back to the cluster), then the scale-outs one replica at a
// time in order of need (GrantScaleOuts), then the CPU workers.
void Engine::ApplyPipelineDecision(const std::vector<int>& stages,
                                   const core::PipelineDecision& d) {
  std::vector<int> want(stages.size(), 0);
  for (size_t j = 0; j < stages.size(); ++j) {
    Function& f = fns_[stages[j]];
    const core::PipelineStageDecision& sd = d.stages[j];
    if (sd.replica_delta != 0 || sd.cpu_worker_delta != 0) {
      Log(stages[j], "pipeline_scale replicas=", f.deployed.size(), " delta=", sd.replica_delta,
          " cpu_delta=", sd.cpu_worker_delta, " key=", f.stage->key ? 1 : 0);
    }
    // To deployed + delta, clamped to [min_instances, max_instances].
    const int deployed = static_cast<int>(f.deployed.size());
    const int target = std::clamp(deployed + sd.replica_delta, f.config->min_instances,
                                  std::max(f.config->min_instances, f.config->max_instances));
    if (deployed > target)
      DrainLeastLoaded(f.deployed, deployed - target);
    want[j] = std::max(0, target - deployed);
  }
  GrantScaleOuts(stages, want);
  for (size_t j = 0; j < stages.size() && error_.ok(); ++j)
    ApplyCpuDelta(stages[j], d.stages[j].cpu_worker_delta);
}

// One replica at a time in core::ScaleOutOrder's order (most requests waiting per deployed
// replica first) until every stage has its replicas or the cluster has no room for it (a stage
// that cannot be placed is not tried again in this decision). When the cluster cannot satisfy
// every stage, the most congested stages get the GPUs, whatever their index; while it can, every
// stage gets what it asked for. The controller grants in the same order (controller_pipeline.cc).
void Engine::GrantScaleOuts(const std::vector<int>& stages, const std::vector<int>& want) {
  std::vector<core::ScaleOutNeed> needs;
  for (size_t j = 0; j < stages.size(); ++j) {
    const Function& f = fns_[stages[j]];
    needs.push_back({static_cast<double>(f.stage->waiting.value()),
                     static_cast<int>(f.deployed.size()), want[j]});
  }
  core::ScaleOutOrder order(std::move(needs));
  for (int j = order.Next(); j >= 0 && error_.ok(); j = order.Next()) {
    const int fn = stages[static_cast<size_t>(j)];
    absl::Status s = PlaceInstance(fn, /*initial=*/false);
    if (absl::IsResourceExhausted(s)) {
      const size_t deployed = fns_[fn].deployed.size();
      Log(fn, "place_failed deployed=", deployed, " desired=",
          deployed + static_cast<size_t>(want[static_cast<size_t>(j)] - order.granted(j)));
      order.Refused(j);
    } else if (!s.ok()) {
      Fail(std::move(s));
    } else {
      order.Granted(j);
    }
  }
}

// Within [0, cpu.max_workers]; none for a stage that cannot run on CPU (cpu_slowdown 0).
void Engine::ApplyCpuDelta(int fn, int delta) {
  StageState& st = *fns_[fn].stage;
  const core::PipelineCpuProfile& cpu = fns_[fn].config->stage->traits.cpu;
  const int workers = static_cast<int>(st.cpu_workers.size());
  const int max_workers = cpu.cpu_slowdown > 0 ? cpu.max_workers : 0;
  const int want = std::clamp(workers + delta, 0, std::max(workers, max_workers));
  for (int k = workers; k < std::min(want, max_workers); ++k) {
    if (absl::Status s = StartCpuWorker(fn); !s.ok()) {
      Log(fn, "cpu_place_failed workers=", st.cpu_workers.size(), " desired=", want);
      break;
    }
  }
  if (want < workers)
    DrainLeastLoaded(st.cpu_workers, workers - want);
}

// Drains `n` of `ids` in core::PickScaleIn's order (starting first, then least loaded, newest).
void Engine::DrainLeastLoaded(const std::vector<int32_t>& ids, int n) {
  std::vector<core::ScaleInCandidate> candidates;
  for (int32_t id : ids) {
    const Instance& inst = *instances_[id];
    candidates.push_back({id, inst.state() == InstanceState::kWarm, inst.outstanding()});
  }
  for (int64_t id : core::PickScaleIn(std::move(candidates), n))
    Drain(static_cast<int32_t>(id));
}

int Engine::FreeCpuCores() const {
  int free_cores = 0;
  for (size_t n = 0; n < cpu_used_.size(); ++n)
    free_cores += std::max(0, config_.cluster.nodes[n].cpu_cores - cpu_used_[n]);
  return free_cores;
}

std::vector<core::NodeId> Engine::CachedOn(const Function& f) const {
  std::vector<core::NodeId> nodes;
  if (!config_.cold_start.host_cache)
    return nodes;
  for (size_t n = 0; n < host_cache_.size(); ++n) {
    if (host_cache_[n].Contains(f.model))
      nodes.push_back(core::NodeId(static_cast<int64_t>(n)));
  }
  return nodes;
}

// On the node with room for `cores_per_worker` that holds the stage's parameters in its host
// cache (then: the most free cores, then the lowest index). Start: ColdStartConfig::
// cpu_worker_start, plus reading the parameters from storage on a host-cache miss. A CPU worker
// is not a cold start (FunctionResult::cold_starts counts GPU replicas).
int Engine::PickCpuNode(const Function& f, int cores, bool* cached) const {
  int best = -1;
  int best_free = 0;
  *cached = false;
  for (size_t n = 0; n < cpu_used_.size(); ++n) {
    const int free_cores = config_.cluster.nodes[n].cpu_cores - cpu_used_[n];
    const bool hit = config_.cold_start.host_cache && host_cache_[n].Contains(f.model);
    if (free_cores < cores)
      continue;
    if (best < 0 || (hit && !*cached) || (hit == *cached && free_cores > best_free)) {
      best = static_cast<int>(n);
      *cached = hit;
      best_free = free_cores;
    }
  }
  return best;
}

absl::Status Engine::StartCpuWorker(int fn) {
  Function& f = fns_[fn];
  StageState& st = *f.stage;
  const int cores = f.config->stage->traits.cpu.cores_per_worker;
  bool best_cached = false;
  const int best = PickCpuNode(f, cores, &best_cached);
  if (best < 0)
    return absl::ResourceExhaustedError(absl::StrCat("no node has ", cores, " free CPU cores"));
  const int32_t id = static_cast<int32_t>(instances_.size());
  instances_.push_back(
      std::make_unique<Instance>(common::InstanceId(id), fn, std::vector<core::GpuId>{}));
  Instance& inst = *instances_.back();
  inst.quota = f.quota;
  inst.max_batch = f.max_batch;
  inst.cpu_node = best;
  inst.cpu_cores = cores;
  cpu_used_[best] += cores;
  st.cpu_workers.push_back(id);
  const absl::Time now = env_.Now();
  st.cpu_deployed.Add(now, 1);
  st.servers.Add(now, 1);
  inst.placed_at = now;
  inst.TransitionTo(InstanceState::kLoading);
  if (best_cached)
    host_cache_[best].Touch(f.model);
  const absl::Duration load =
      config_.cold_start.cpu_worker_start +
      (best_cached
           ? absl::ZeroDuration()
           : config_.cluster.nodes[best].storage_bandwidth.TimeFor(f.model->info.param_bytes));
  Log(fn, "cpu_start inst=", id, " node=", best, " cores=", cores,
      absl::StrFormat(" load_s=%.6f", absl::ToDoubleSeconds(load)),
      " source=", best_cached ? "host_cache" : "storage");
  inst.load_timer = env_.RunAfter(load, [this, id] {
    instances_[id]->load_timer = 0;
    BecomeWarm(id);
  });
  return absl::OkStatus();
}

// One batch at the stage's GPU batch latency (at the quota's request share and time quota)
// x cpu_slowdown; nothing shares the worker's cores.
void Engine::StartCpuBatch(Instance& inst) {
  Function& f = fns_[inst.function()];
  const WorkItem w = MakeBatchWork(f, inst);
  const double secs = w.SecondsAt(inst.quota.request, inst.quota.time_quota) *
                      f.config->stage->traits.cpu.cpu_slowdown;
  const int32_t id = static_cast<int32_t>(inst.id().value());
  env_.RunAfter(absl::Seconds(secs), [this, id] {
    Instance& i = *instances_[id];
    i.set_executing(false);
    FinishBatch(i);
  });
}

}  // namespace sluice::sim
