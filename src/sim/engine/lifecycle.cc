// Instance lifecycle: placement (the policy chooses, the engine commits to ClusterState and
// notifies the policy), cold starts (container start + parameter load from storage, or from the
// node's host cache at PCIe bandwidth), warm-up, draining and release; the GPU time each
// function holds. The load samples and reconciliation that drive it: sampling.cc.
#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

#include "common/status.h"
#include "core/longtail/parking.h"
#include "core/serving/scale_in.h"
#include "sim/engine/engine.h"
#include "sim/engine/sample_observer.h"

namespace sluice::sim {
namespace {

std::string GpuList(const std::vector<core::GpuId>& gpus) {
  return absl::StrJoin(gpus, ",",
                       [](std::string* out, core::GpuId g) { absl::StrAppend(out, g.value()); });
}

}  // namespace

// Time-sliced allocations count request x time quota; GPUs without one keep sum_request exactly.
double Engine::AllocatedShare(const core::GpuState& g) {
  bool sliced = false;
  for (const core::Allocation& a : g.allocations)
    sliced = sliced || a.quota.time_quota < 1;
  if (!sliced)
    return std::min(1.0, g.sum_request);
  double sum = 0;
  for (const core::Allocation& a : g.allocations)
    sum += a.quota.request * a.quota.time_quota;
  return std::min(1.0, sum);
}

double Engine::AllocatedOn(const std::vector<core::GpuId>& gpus) const {
  double sum = 0;
  for (core::GpuId g : gpus)
    sum += AllocatedShare(cluster_.gpu(g));
  return sum;
}

void Engine::Hold(int fn, const std::vector<core::GpuId>& gpus, const core::SmQuota& quota,
                  double sign) {
  const double held = quota.request * quota.time_quota;
  double usd_per_s = 0;
  for (core::GpuId g : gpus)
    usd_per_s += held * gpu_usd_per_s_[g.value()];
  fns_[fn].held.Change(env_.Now(), sign * held * static_cast<double>(gpus.size()),
                       sign * usd_per_s);
  total_held_.Change(env_.Now(), sign * held * static_cast<double>(gpus.size()), sign * usd_per_s);
}

void Engine::ReportCluster() {
  cluster_metrics_.Update(env_.Now(), allocated_share_,
                          static_cast<int>(cluster_.active_gpus().size()));
}

absl::Status Engine::PlaceInstance(int fn, bool initial, bool parked) {
  const common::InstanceId iid(static_cast<int64_t>(instances_.size()));
  const Function& f = fns_[fn];
  const core::SmQuota quota = parked ? core::ParkedQuota() : f.quota;
  SLUICE_ASSIGN_OR_RETURN(std::vector<core::GpuId> gpus, ChooseGpus(fn, iid, quota));
  SLUICE_RETURN_IF_ERROR(Commit(fn, iid, gpus, quota));
  Launch(fn, iid, std::move(gpus), quota, f.max_batch, initial);
  if (parked) {
    instances_.back()->parked = true;
    ++fns_[fn].parked_deployed;
    fns_[fn].metrics.OnPark();
  }
  return absl::OkStatus();
}

// Asks the policy and checks the answer: `gpus` distinct, known GPUs.
absl::StatusOr<std::vector<core::GpuId>> Engine::ChooseGpus(int fn, common::InstanceId iid,
                                                            const core::SmQuota& quota) {
  const Function& f = fns_[fn];
  const FunctionConfig& fc = *f.config;
  core::InstanceDemand d;
  d.function = f.traits.id;
  d.instance = iid;
  d.kind = f.traits.kind;
  d.gpus = fc.training ? fc.training->workers : fc.gpus;
  d.memory_per_gpu = fc.memory;
  d.quota = quota;
  d.same_node = fc.training ? fc.training->same_node : false;
  if (f.stage != nullptr) {
    d.pipeline_stage = f.stage->index;
    d.key_stage = f.stage->key;
    d.cached_on = CachedOn(f);
  }
  SLUICE_ASSIGN_OR_RETURN(std::vector<core::GpuId> gpus, policy_->placement().Place(d, cluster_));
  std::vector<core::GpuId> sorted = gpus;
  std::sort(sorted.begin(), sorted.end());
  const bool known = std::all_of(gpus.begin(), gpus.end(), [&](core::GpuId g) {
    return g.valid() && g.value() < cluster_.gpu_count();
  });
  if (!known || static_cast<int>(gpus.size()) != d.gpus ||
      std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    return absl::InternalError(absl::StrCat("placement ", std::string(policy_->placement().name()),
                                            " returned GPUs (", GpuList(gpus), ") for a demand of ",
                                            d.gpus, " distinct GPUs of ", cluster_.gpu_count()));
  }
  return gpus;
}

// Books the instance's allocations in ClusterState (all or nothing) and tells the policy.
absl::Status Engine::Commit(int fn, common::InstanceId iid, const std::vector<core::GpuId>& gpus,
                            const core::SmQuota& quota) {
  const Function& f = fns_[fn];
  const double before = AllocatedOn(gpus);
  for (core::GpuId g : gpus) {
    const core::Allocation a{iid, f.traits.id, g, f.config->memory, quota};
    if (absl::Status s = cluster_.Add(a); !s.ok()) {
      for (const core::Allocation& r : cluster_.Remove(iid)) {
        policy_->placement().OnRemoved(r, cluster_);
      }
      return absl::InternalError(absl::StrCat(
          "placement ", std::string(policy_->placement().name()), " chose GPU ", g.value(), " for ",
          f.config->name, ", which cannot host it: ", s.message()));
    }
    policy_->placement().OnAdded(a, cluster_);
  }
  allocated_share_ += AllocatedOn(gpus) - before;
  Hold(fn, gpus, quota, +1);
  ReportCluster();
  return absl::OkStatus();
}

// Creates the instance (kCold -> kLoading) and starts its cold start; instances that exist at
// t = 0 (`initial`) are warm at once and not counted as cold starts.
void Engine::Launch(int fn, common::InstanceId iid, std::vector<core::GpuId> gpus,
                    const core::SmQuota& quota, int max_batch, bool initial) {
  Function& f = fns_[fn];
  const int32_t id = static_cast<int32_t>(iid.value());
  instances_.push_back(std::make_unique<Instance>(iid, fn, gpus));
  Instance& inst = *instances_.back();
  inst.quota = quota;
  inst.max_batch = max_batch;
  shares_.Attach(id, gpus, quota);
  vertical_->Register(id, f.traits.slo_sensitive,
                      f.model->info.kind == core::FunctionKind::kLlmInference);
  f.deployed.push_back(id);
  inst.placed_at = env_.Now();
  inst.idle_since = inst.placed_at;
  if (f.stage != nullptr) {
    f.stage->gpu_replicas.Add(inst.placed_at, 1);
    f.stage->servers.Add(inst.placed_at, 1);
  }
  Log(fn, "place inst=", id, " gpus=", GpuList(gpus));
  inst.TransitionTo(InstanceState::kLoading);
  if (initial) {
    BecomeWarm(id);
    return;
  }
  bool hit = false;
  const absl::Duration cold = ColdStartTime(f, gpus, &hit);
  for (core::GpuId g : gpus) {  // a hit makes the cached copy the most recently used
    host_cache_[cluster_.gpu(g).node.value()].Touch(f.model);
  }
  f.metrics.OnColdStart();
  Log(fn, "cold_start inst=", id, absl::StrFormat(" load_s=%.6f", absl::ToDoubleSeconds(cold)),
      " source=", hit ? "host_cache" : "storage");
  inst.load_timer = env_.RunAfter(cold, [this, id] {
    instances_[id]->load_timer = 0;
    BecomeWarm(id);
  });
}

// Each node loads its share of the parameters (model shards: param_bytes x shards on the node /
// shards; data-parallel training workers: a full copy each) at its storage bandwidth, or at PCIe
// bandwidth when host_cache is on and the node's host cache (an LRU bounded by its host memory,
// HostCache) still holds the model. Nodes load in parallel; the cold start ends with the slowest.
// Concurrent loads do not contend.
absl::Duration Engine::ColdStartTime(const Function& f, const std::vector<core::GpuId>& gpus,
                                     bool* host_cache_hit) const {
  std::map<int64_t, int> per_node;
  for (core::GpuId g : gpus)
    ++per_node[cluster_.gpu(g).node.value()];
  const double params = static_cast<double>(f.model->info.param_bytes.count());
  const bool training = f.is_training();
  absl::Duration load = absl::ZeroDuration();
  bool all_hit = true;
  for (const auto& [node, count] : per_node) {
    const core::NodeSpec& spec = cluster_.spec().nodes[node];
    const bool hit = config_.cold_start.host_cache && host_cache_[node].Contains(f.model);
    all_hit = all_hit && hit;
    const double bytes = training ? params * count : params * count / gpus.size();
    const core::Bandwidth bw = hit ? spec.pcie_bandwidth : spec.storage_bandwidth;
    load = std::max(load, bw.TimeFor(core::Bytes(std::llround(bytes))));
  }
  *host_cache_hit = all_hit;
  const absl::Duration process = start_traits_.prestarted_pool ? config_.cold_start.pool_handoff
                                                               : config_.cold_start.container_start;
  return process + load;
}

void Engine::BecomeWarm(int32_t id) {
  Instance& inst = *instances_[id];
  const int fn = inst.function();
  Function& f = fns_[fn];
  inst.TransitionTo(InstanceState::kWarm);
  inst.warm_at = env_.Now();
  CacheParams(inst);
  Log(fn, "warm inst=", id);
  if (f.is_training()) {
    StartIteration(inst);
    return;
  }
  f.gateway.AddWarm(id, inst.outstanding());
  FlushHeld(fn);
}

// The parameters a warm instance loaded stay in its nodes' host caches (each node keeps the part
// it loaded: param_bytes x its GPUs / all GPUs; training: a full copy per GPU; a CPU worker: all).
void Engine::CacheParams(const Instance& inst) {
  const Function& f = fns_[inst.function()];
  const double params = static_cast<double>(f.model->info.param_bytes.count());
  std::map<int64_t, int> per_node;
  for (core::GpuId g : inst.gpus())
    ++per_node[cluster_.gpu(g).node.value()];
  if (inst.is_cpu())
    per_node[inst.cpu_node] = 1;
  const double parts = inst.is_cpu() ? 1.0 : static_cast<double>(inst.gpus().size());
  for (const auto& [node, count] : per_node) {
    const double bytes = f.is_training() ? params * count : params * count / parts;
    for (HostCache::Key k : host_cache_[node].Insert(f.model, core::Bytes(std::llround(bytes)))) {
      Log(inst.function(), "cache_evict node=", node,
          " model=", static_cast<const core::ModelEntry*>(k)->info.name);
    }
  }
}

void Engine::Drain(int32_t id) {
  Instance& inst = *instances_[id];
  Function& f = fns_[inst.function()];
  std::vector<int32_t>& list = inst.is_cpu() ? f.stage->cpu_workers : f.deployed;
  auto it = std::find(list.begin(), list.end(), id);
  SLUICE_CHECK(it != list.end());
  list.erase(it);
  if (inst.parked && !inst.is_cpu())
    --f.parked_deployed;
  if (f.stage != nullptr)
    (inst.is_cpu() ? f.stage->cpu_deployed : f.stage->gpu_replicas).Add(env_.Now(), -1);
  if (inst.state() == InstanceState::kLoading) {
    env_.Cancel(inst.load_timer);
    inst.load_timer = 0;
  } else if (!f.is_training()) {
    f.gateway.RemoveWarm(id, inst.outstanding());
  }
  inst.TransitionTo(InstanceState::kDraining);
  Log(inst.function(), "drain inst=", id, " outstanding=", inst.outstanding());
  if (inst.idle()) {
    Retire(id);
  } else {
    MaybeStartBatch(inst);
  }
}

void Engine::Retire(int32_t id) {
  Instance& inst = *instances_[id];
  inst.TransitionTo(InstanceState::kGone);
  if (inst.batch_timer != 0)
    env_.Cancel(inst.batch_timer);
  inst.batch_timer = 0;
  ReleaseResources(inst);
  Log(inst.function(), "gone inst=", id);
}

void Engine::ReleaseResources(Instance& inst) {
  const int32_t id = static_cast<int32_t>(inst.id().value());
  if (inst.outstanding() == 0)
    CountIdle(inst, env_.Now());
  if (StageState* st = fns_[inst.function()].stage.get(); st != nullptr)
    st->servers.Add(env_.Now(), -1);
  if (inst.is_cpu()) {
    cpu_used_[inst.cpu_node] -= inst.cpu_cores;
    return;
  }
  shares_.Detach(id);
  for (core::GpuId g : inst.gpus())
    vertical_->OnDetached(g, id);
  const double before = AllocatedOn(inst.gpus());
  const std::vector<core::Allocation> released = cluster_.Remove(inst.id());
  allocated_share_ += AllocatedOn(inst.gpus()) - before;
  Hold(inst.function(), inst.gpus(), inst.quota, -1);
  for (const core::Allocation& a : released)
    policy_->placement().OnRemoved(a, cluster_);
  ReportCluster();
}

// Functions visited at this sample: the sample list (every function, minus those whose scaler
// said quiet samples are no-ops and that had nothing going on), plus the ones that had arrivals
// since, merged back in function order so that reconciliation order never depends on skipping.
void Engine::OnHorizon() {
  after_horizon_ = true;
  for (size_t i = 0; i < fns_.size(); ++i) {
    Function& f = fns_[i];
    if (f.wakeup != 0)
      env_.Cancel(f.wakeup);
    f.wakeup = 0;
    f.wakeup_due = absl::InfiniteFuture();
    DropUnservable(static_cast<int>(i));
  }
  for (PipelineState& ps : pipes_) {
    if (ps.wakeup != 0)
      env_.Cancel(ps.wakeup);
    ps.wakeup = 0;
  }
}

}  // namespace sluice::sim
