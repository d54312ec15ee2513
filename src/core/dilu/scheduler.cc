// DiluScheduler: tiers of Algorithm 1 over the FitIndex orderings, plus the idle-GPU book used for
// tier 3. Same-node placement lives in scheduler_node.cc.
#include "core/dilu/scheduler.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

#include "common/status.h"

namespace sluice::core {
namespace {

constexpr int kBuckets = 4096;

}  // namespace

absl::StatusOr<std::unique_ptr<DiluScheduler>> DiluScheduler::Create(
    const SchedulerConfig& config, std::unique_ptr<AffinityHook> hook) {
  if (!(config.alpha >= 0) || !(config.beta >= 0) || !(config.alpha + config.beta > 0)) {
    return absl::InvalidArgumentError("alpha and beta must be >= 0 with alpha + beta > 0");
  }
  if (!(config.omega > 0) || !(config.gamma >= config.omega)) {
    return absl::InvalidArgumentError("need 0 < omega <= gamma");
  }
  if (config.node_candidates < 1) {
    return absl::InvalidArgumentError("node_candidates must be >= 1");
  }
  if (hook == nullptr)
    hook = MakeAffinityHook(config.affinity);
  return std::unique_ptr<DiluScheduler>(new DiluScheduler(config, std::move(hook)));
}

DiluScheduler::DiluScheduler(const SchedulerConfig& config, std::unique_ptr<AffinityHook> hook)
    : config_(config), hook_(std::move(hook)) {}

double DiluScheduler::Score(const GpuState& gpu, const Room& need) const {
  const double mem_total = static_cast<double>(gpu.spec.memory.count());
  const double new_mem = static_cast<double>(gpu.memory_used.count() + need.memory);
  return config_.alpha * (1.0 - (gpu.sum_request + need.request)) +
         config_.beta * (1.0 - new_mem / mem_total);
}

Room DiluScheduler::RoomOf(const GpuState& gpu) const {
  return Room{config_.omega - gpu.sum_request, config_.gamma - gpu.sum_limit,
              gpu.memory_free().count()};
}

bool DiluScheduler::EnsureInit(const ClusterState& state) {
  if (initialized_) {
    SLUICE_CHECK_MSG(gpu_count_ == state.gpu_count(), "one DiluScheduler serves one cluster");
    return false;
  }
  initialized_ = true;
  gpu_count_ = state.gpu_count();
  BuildClasses(state);
  int max_per_node = 0;
  for (int n = 0; n < state.node_count(); ++n) {
    max_per_node = std::max<int>(max_per_node, state.gpus_of(NodeId(n)).size());
  }
  BuildIndices(max_per_node, state.node_count());
  for (int g = 0; g < gpu_count_; ++g)
    Reindex(g, state);
  for (GpuId g : state.active_gpus()) {
    for (const Allocation& a : state.gpu(g).allocations)
      hook_->OnAdded(a);
  }
  return true;
}

void DiluScheduler::BuildClasses(const ClusterState& state) {
  class_memory_.clear();
  class_of_.assign(gpu_count_, 0);
  node_of_.assign(gpu_count_, 0);
  for (const GpuState& g : state.gpus()) {
    const int64_t m = g.spec.memory.count();
    auto it = std::find(class_memory_.begin(), class_memory_.end(), m);
    class_of_[g.id.value()] = static_cast<int>(it - class_memory_.begin());
    node_of_[g.id.value()] = static_cast<int>(g.node.value());
    if (it == class_memory_.end())
      class_memory_.push_back(m);
  }
}

void DiluScheduler::BuildIndices(int max_per_node, int nodes) {
  const size_t classes = class_memory_.size();
  int64_t max_memory = 1;
  for (int64_t m : class_memory_)
    max_memory = std::max(max_memory, m);
  best_fit_.clear();
  worst_fit_.clear();
  first_fit_.clear();
  if (config_.resource_complementarity) {
    const double lo = config_.alpha * (1.0 - config_.omega);
    for (size_t c = 0; c < classes; ++c) {
      best_fit_.emplace_back(gpu_count_, lo, config_.alpha + config_.beta, kBuckets);
    }
    worst_fit_.emplace_back(gpu_count_, -static_cast<double>(max_memory), 1.0, kBuckets);
  } else {
    first_fit_.emplace_back(gpu_count_, 0.0, gpu_count_ + 1.0, kBuckets);
  }
  idle_.assign(gpu_count_, 0);
  hidden_.assign(gpu_count_, 0);
  idle_gpus_.assign(classes, IdSet(gpu_count_));
  node_idle_.assign(nodes, 0);
  idle_nodes_.assign(classes, std::vector<IdSet>(max_per_node + 1, IdSet(nodes)));
}

void DiluScheduler::SetIdle(int gpu, bool idle) {
  if (static_cast<bool>(idle_[gpu]) == idle)
    return;
  idle_[gpu] = idle;
  const int c = class_of_[gpu];
  const int node = node_of_[gpu];
  int& count = node_idle_[node];
  if (count > 0)
    idle_nodes_[c][count].Erase(node);
  if (idle) {
    idle_gpus_[c].Insert(gpu);
    ++count;
  } else {
    idle_gpus_[c].Erase(gpu);
    --count;
  }
  if (count > 0)
    idle_nodes_[c][count].Insert(node);
}

void DiluScheduler::Reindex(int gpu, const ClusterState& state) {
  hidden_[gpu] = 0;
  const GpuState& gs = state.gpu(GpuId(gpu));
  if (!gs.active()) {
    for (auto* v : {&best_fit_, &worst_fit_, &first_fit_}) {
      for (FitIndex& index : *v)
        index.Erase(gpu);
    }
    SetIdle(gpu, true);
    return;
  }
  SetIdle(gpu, false);
  const Room room = RoomOf(gs);
  if (config_.resource_complementarity) {
    const double used = static_cast<double>(gs.memory_used.count());
    const double total = static_cast<double>(gs.spec.memory.count());
    const double key = config_.alpha * (1.0 - gs.sum_request) + config_.beta * (1.0 - used / total);
    best_fit_[class_of_[gpu]].Upsert(gpu, key, room);
    worst_fit_[0].Upsert(gpu, -static_cast<double>(room.memory), room);
  } else {
    first_fit_[0].Upsert(gpu, gpu, room);
  }
}

void DiluScheduler::Hide(int gpu) {
  hidden_[gpu] = 1;
  SetIdle(gpu, false);
  for (auto* v : {&best_fit_, &worst_fit_, &first_fit_}) {
    for (FitIndex& index : *v)
      index.Erase(gpu);
  }
}

DiluScheduler::Order DiluScheduler::OrderFor(const InstanceDemand& demand) const {
  if (!config_.resource_complementarity)
    return Order::kFirstFit;
  if (demand.kind == FunctionKind::kLlmInference && demand.gpus > 1)
    return Order::kWorstFitMemory;
  return Order::kBestFit;
}

double DiluScheduler::OrderKey(Order order, const GpuState& gpu, const Room& need) const {
  switch (order) {
    case Order::kBestFit:
      return Score(gpu, need);
    case Order::kWorstFitMemory:
      return -static_cast<double>(gpu.memory_free().count());
    case Order::kFirstFit:
      return static_cast<double>(gpu.id.value());
  }
  return 0;
}

bool DiluScheduler::Better(const Pick& a, const Pick& b) {
  if (a.gpu < 0)
    return false;
  if (b.gpu < 0)
    return true;
  return a.key < b.key || (a.key == b.key && a.gpu < b.gpu);
}

int DiluScheduler::PickAffinity(const InstanceDemand& d, const Room& need, Order order,
                                const ClusterState& state) {
  wa_.clear();
  hook_->Candidates(d, state, wa_);
  Pick best;
  for (GpuId id : wa_) {
    const int g = static_cast<int>(id.value());
    const GpuState& gs = state.gpu(id);
    if (hidden_[g] || !gs.active() || !Fits(RoomOf(gs), need))
      continue;
    const Pick p{g, OrderKey(order, gs, need)};
    if (Better(p, best))
      best = p;
  }
  return best.gpu;
}

int DiluScheduler::PickActive(const Room& need, Order order, const ClusterState& state) const {
  switch (order) {
    case Order::kFirstFit:
      return first_fit_[0].FindFirst(need);
    case Order::kWorstFitMemory:
      return worst_fit_[0].FindFirst(need);
    case Order::kBestFit:
      break;
  }
  Pick best;
  for (const FitIndex& index : best_fit_) {  // one per GPU memory size
    const int g = index.FindFirst(need);
    if (g < 0)
      continue;
    const Pick p{g, Score(state.gpu(GpuId(g)), need)};
    if (Better(p, best))
      best = p;
  }
  return best.gpu;
}

int DiluScheduler::PickIdle(const Room& need, Order order) const {
  if (need.request > config_.omega + kShareEpsilon || need.limit > config_.gamma + kShareEpsilon) {
    return -1;
  }
  Pick best;
  for (size_t c = 0; c < class_memory_.size(); ++c) {
    if (idle_gpus_[c].empty() || need.memory > class_memory_[c])
      continue;
    const int g = idle_gpus_[c].First();
    const double mem = static_cast<double>(class_memory_[c]);
    double key = g;  // first fit
    if (order == Order::kBestFit) {
      key = config_.alpha * (1.0 - need.request) + config_.beta * (1.0 - need.memory / mem);
    } else if (order == Order::kWorstFitMemory) {
      key = -mem;
    }
    const Pick p{g, key};
    if (Better(p, best))
      best = p;
  }
  return best.gpu;
}

absl::StatusOr<std::vector<GpuId>> DiluScheduler::Place(const InstanceDemand& demand,
                                                        const ClusterState& state) {
  EnsureInit(state);
  if (demand.gpus < 1)
    return absl::InvalidArgumentError("demand needs at least one GPU");
  SLUICE_RETURN_IF_ERROR(ValidateQuota(demand.quota));
  if (demand.memory_per_gpu.count() < 0)
    return absl::InvalidArgumentError("negative memory");
  const Room need{demand.quota.request, demand.quota.limit, demand.memory_per_gpu.count()};
  const Order order = OrderFor(demand);
  if (demand.same_node && demand.gpus > 1)
    return PlaceOnOneNode(demand, need, order, state);
  std::vector<GpuId> chosen;
  for (int k = 0; k < demand.gpus; ++k) {
    int g = config_.workload_affinity ? PickAffinity(demand, need, order, state) : -1;
    if (g < 0)
      g = PickActive(need, order, state);
    if (g < 0)
      g = PickIdle(need, order);
    if (g < 0)
      break;
    chosen.push_back(GpuId(g));
    Hide(g);
  }
  for (GpuId g : chosen)
    Reindex(static_cast<int>(g.value()), state);
  if (static_cast<int>(chosen.size()) < demand.gpus) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "no room for instance ", demand.instance.value(), " (", demand.gpus, " GPU(s))"));
  }
  return chosen;
}

void DiluScheduler::OnAdded(const Allocation& a, const ClusterState& state) {
  if (EnsureInit(state))
    return;  // built from `state`, which already holds `a`
  Reindex(static_cast<int>(a.gpu.value()), state);
  hook_->OnAdded(a);
}

void DiluScheduler::OnRemoved(const Allocation& a, const ClusterState& state) {
  if (EnsureInit(state))
    return;
  Reindex(static_cast<int>(a.gpu.value()), state);
  hook_->OnRemoved(a);
}

void DiluScheduler::OnRequota(const Allocation& before, const Allocation& after,
                              const ClusterState& state) {
  if (EnsureInit(state))
    return;
  Reindex(static_cast<int>(after.gpu.value()), state);
  hook_->OnRemoved(before);
  hook_->OnAdded(after);
}

}  // namespace sluice::core
