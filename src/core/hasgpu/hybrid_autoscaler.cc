// Algorithm 1. One Decide() builds a Planner: the function's pods with their capacities and a
// scratch AlignedGpu per GPU it touches, so several actions in one decision see each other
// (a quota raised on a GPU is not offered again to a new pod). ClusterState is never modified.
#include "core/hasgpu/hybrid_autoscaler.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

#include "core/hasgpu/aligned_gpu.h"

namespace sluice::core {
namespace {

constexpr double kEps = 1e-9;

double RoundQ(double q) {
  return std::clamp(std::round(q * 1e9) / 1e9, 0.0, 1.0);
}

struct Pod {
  PodView view;
  double q = 1;         // planned time quota
  double capacity = 0;  // at the planned quota
};

class Planner {
 public:
  Planner(const HybridAutoscalerConfig& config, const CapacityModel& model,
          const std::vector<PodView>& pods, const ClusterState& state)
      : config_(config), model_(model), state_(state) {
    for (const PodView& p : pods) {
      Pod pod{p, p.quota.time_quota, model.Capacity(p.batch, p.quota.limit, p.quota.time_quota)};
      total_ += pod.capacity;
      pods_.push_back(pod);
    }
  }

  double total() const { return total_; }
  size_t pods() const { return pods_.size(); }
  std::vector<ScalingAction> TakeActions() { return std::move(actions_); }

  void VerticalUp(double& gap);
  void HorizontalUp(double& gap);
  bool ScaleDown(double target, int min_pods);

 private:
  AlignedGpu& Book(GpuId id);
  // Adds the cheapest pod covering `gap` on a used GPU (ascending HGO); false if none covers it.
  bool AddOnUsedGpu(double& gap);
  // Adds a pod on an idle GPU; false if there is none with the memory.
  bool AddOnNewGpu(double& gap);
  void AddPod(GpuId gpu, const PodConfig& c, double& gap);
  // The smallest number of quota steps (<= n) reaching the capacity of n steps.
  int TrimSteps(const Pod& pod, int n) const;

  const HybridAutoscalerConfig& config_;
  const CapacityModel& model_;
  const ClusterState& state_;
  std::vector<Pod> pods_;
  double total_ = 0;
  absl::flat_hash_map<GpuId, AlignedGpu> books_;
  std::vector<GpuId> opened_;  // idle GPUs this plan put a pod on
  int next_idle_ = 0;          // scan position for idle GPUs
  int added_ = 0;
  std::vector<ScalingAction> actions_;
};

AlignedGpu& Planner::Book(GpuId id) {
  auto it = books_.find(id);
  if (it == books_.end())
    it = books_.emplace(id, AlignedGpu(state_.gpu(id), config_.max_partition_types)).first;
  return it->second;
}

int Planner::TrimSteps(const Pod& pod, int n) const {
  const double step = config_.capacity.quota_step;
  const double top = model_.Capacity(pod.view.batch, pod.view.quota.limit, RoundQ(pod.q + n * step));
  while (n > 0 && model_.Capacity(pod.view.batch, pod.view.quota.limit,
                                  RoundQ(pod.q + (n - 1) * step)) >= top - kEps) {
    --n;
  }
  return n;
}

void Planner::VerticalUp(double& gap) {
  std::vector<Pod*> order;
  for (Pod& p : pods_)
    order.push_back(&p);
  std::stable_sort(order.begin(), order.end(), [](const Pod* a, const Pod* b) {
    if (a->view.quota.limit != b->view.quota.limit)
      return a->view.quota.limit > b->view.quota.limit;
    return a->view.instance.value() < b->view.instance.value();
  });
  const double step = config_.capacity.quota_step;
  for (Pod* pod : order) {
    if (gap <= kEps)
      break;
    const double s = pod->view.quota.limit;
    AlignedGpu& book = Book(pod->view.gpu);
    const double max_q = book.MaxQuotaFor(s, pod->q);
    int n = 0;
    double added = 0;
    while (pod->q + (n + 1) * step <= max_q + kEps && gap - added > kEps) {
      ++n;
      added = model_.Capacity(pod->view.batch, s, RoundQ(pod->q + n * step)) - pod->capacity;
    }
    n = TrimSteps(*pod, n);
    if (n == 0)
      continue;
    const double new_q = RoundQ(pod->q + n * step);
    const double new_cap = model_.Capacity(pod->view.batch, s, new_q);
    book.ChangeQuota(s, pod->q, new_q);
    gap -= new_cap - pod->capacity;
    total_ += new_cap - pod->capacity;
    pod->q = new_q;
    pod->capacity = new_cap;
    SmQuota quota = pod->view.quota;
    quota.time_quota = new_q;
    actions_.push_back({ScalingAction::Kind::kSetQuota, pod->view.instance, pod->view.gpu, quota});
  }
}

void Planner::AddPod(GpuId gpu, const PodConfig& c, double& gap) {
  Book(gpu).AddPod(c.sm, c.q, model_.function().memory);
  ScalingAction a;
  a.kind = ScalingAction::Kind::kAdd;
  a.gpu = gpu;
  a.quota = SmQuota{c.sm, c.sm, c.q};
  a.batch = c.batch;
  actions_.push_back(a);
  gap -= c.capacity;
  total_ += c.capacity;
  ++added_;
}

bool Planner::AddOnUsedGpu(double& gap) {
  // A GPU whose free SM-time (1 - H_G) is below the cheapest pod covering the gap anywhere on
  // the grid cannot host one; skipping it before the alignment check keeps a decision
  // O(active GPUs) cheap comparisons instead of O(active GPUs) books (hasgpu_bench).
  const std::optional<PodConfig> cheapest = model_.CheapestAnywhere(gap);
  const double min_cost = cheapest && cheapest->capacity >= gap - 1e-9 * std::max(1.0, gap)
                              ? cheapest->cost() - 1e-9
                              : 0.0;
  const Bytes memory = model_.function().memory;
  std::vector<std::pair<double, GpuId>> used;
  auto consider = [&](GpuId id, double held, Bytes free) {
    if (free >= memory && 1.0 - held >= min_cost)
      used.emplace_back(held, id);
  };
  for (GpuId id : state_.active_gpus()) {
    auto it = books_.find(id);
    if (it == books_.end()) {
      consider(id, state_.gpu(id).sum_held, state_.gpu(id).memory_free());
    } else {
      consider(id, it->second.held(), it->second.memory_free());
    }
  }
  for (GpuId id : opened_)
    consider(id, Book(id).held(), Book(id).memory_free());
  std::sort(used.begin(), used.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second.value() < b.second.value();
  });
  std::vector<PartitionRoom> rooms;
  for (const auto& [held, id] : used) {
    auto it = books_.find(id);
    const AlignedGpu probe = it == books_.end()
                                 ? AlignedGpu(state_.gpu(id), config_.max_partition_types)
                                 : it->second;
    rooms.clear();
    for (const AlignedGpu::Type& t : probe.types())
      rooms.push_back({t.sm, probe.MaxNewQuota(t.sm)});
    if (static_cast<int>(probe.types().size()) < probe.max_types()) {
      for (double s : model_.partitions())
        rooms.push_back({s, probe.MaxNewQuota(s)});
    }
    const std::optional<PodConfig> c = model_.Cheapest(gap, rooms);
    if (c && c->capacity >= gap - 1e-9 * std::max(1.0, gap)) {
      AddPod(id, *c, gap);
      return true;
    }
  }
  return false;
}

bool Planner::AddOnNewGpu(double& gap) {
  const Bytes memory = model_.function().memory;
  for (; next_idle_ < state_.gpu_count(); ++next_idle_) {
    const GpuState& g = state_.gpu(GpuId(next_idle_));
    if (g.active() || books_.contains(g.id) || g.memory_free() < memory)
      continue;
    std::optional<PodConfig> c = model_.CheapestAnywhere(gap);
    if (!c && (!pods_.empty() || added_ > 0))
      return false;
    if (!c)
      c = PodConfig{1, 1.0, 1.0, 0.0};  // nothing meets the SLO: one whole-GPU pod, best effort
    opened_.push_back(g.id);
    AddPod(g.id, *c, gap);
    return true;
  }
  return false;
}

void Planner::HorizontalUp(double& gap) {
  const HasGpuFunction& f = model_.function();
  while (gap > kEps && added_ < config_.max_new_pods &&
         static_cast<int>(pods_.size()) + added_ < f.max_instances) {
    if (!AddOnUsedGpu(gap) && !AddOnNewGpu(gap))
      return;
  }
}

bool Planner::ScaleDown(double target, int min_pods) {
  std::vector<Pod*> order;
  for (Pod& p : pods_)
    order.push_back(&p);
  std::stable_sort(order.begin(), order.end(), [](const Pod* a, const Pod* b) {
    if (a->view.quota.limit != b->view.quota.limit)
      return a->view.quota.limit < b->view.quota.limit;
    return a->view.instance.value() > b->view.instance.value();
  });
  const double step = config_.capacity.quota_step;
  int live = static_cast<int>(pods_.size());
  const size_t before = actions_.size();
  for (Pod* pod : order) {
    const double s = pod->view.quota.limit;
    double q = pod->q, cap = pod->capacity;
    while (q - step > kEps) {
      const double c2 = model_.Capacity(pod->view.batch, s, RoundQ(q - step));
      if (total_ - cap + c2 < target - kEps)
        break;
      total_ += c2 - cap;
      cap = c2;
      q = RoundQ(q - step);
    }
    if (q - step <= kEps && live > min_pods && total_ - cap >= target - kEps) {
      total_ -= cap;
      --live;
      ScalingAction remove;
      remove.kind = ScalingAction::Kind::kRemove;
      remove.instance = pod->view.instance;
      remove.gpu = pod->view.gpu;
      actions_.push_back(remove);
    } else if (q < pod->q - kEps) {
      SmQuota quota = pod->view.quota;
      quota.time_quota = q;
      actions_.push_back({ScalingAction::Kind::kSetQuota, pod->view.instance, pod->view.gpu, quota});
    }
  }
  return actions_.size() > before;
}

absl::Status Range(bool ok, const char* field, const char* rule, double v) {
  if (ok)
    return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("has-gpu ", field, " must be ", rule, " (", v, ")"));
}

}  // namespace

absl::Status ValidateHybridConfig(const HybridAutoscalerConfig& c) {
  const absl::Status checks[] = {
      Range(c.alpha > 0 && c.alpha <= 1, "alpha", "in (0, 1]", c.alpha),
      Range(c.beta >= 0 && c.beta < c.alpha, "beta", "in [0, alpha)", c.beta),
      Range(c.cooldown >= absl::ZeroDuration(), "cooldown_s", ">= 0",
                   absl::ToDoubleSeconds(c.cooldown)),
      Range(c.r_min >= 0 && std::isfinite(c.r_min), "r_min", ">= 0", c.r_min),
      Range(c.max_partition_types >= 1, "max_partition_types", ">= 1",
                   c.max_partition_types),
      Range(c.max_new_pods >= 1, "max_new_pods", ">= 1", c.max_new_pods),
      Range(c.queue_drain > absl::ZeroDuration(), "queue_drain_s", "> 0",
                   absl::ToDoubleSeconds(c.queue_drain)),
      Range(c.capacity.slo_fraction > 0 && c.capacity.slo_fraction <= 1, "slo_fraction",
                   "in (0, 1]", c.capacity.slo_fraction),
      Range(c.capacity.sm_step > 0 && c.capacity.sm_step <= 1, "sm_step", "in (0, 1]",
                   c.capacity.sm_step),
      Range(c.capacity.quota_step > 0 && c.capacity.quota_step <= 1, "quota_step",
                   "in (0, 1]", c.capacity.quota_step),
  };
  for (const absl::Status& s : checks) {
    if (!s.ok())
      return s;
  }
  return KalmanRpsPredictor::Create(c.kalman).status();
}

absl::StatusOr<std::unique_ptr<HybridAutoscaler>> HybridAutoscaler::Create(
    const HybridAutoscalerConfig& config, const HasGpuFunction& function) {
  if (absl::Status s = ValidateHybridConfig(config); !s.ok())
    return s;
  absl::StatusOr<KalmanRpsPredictor> kalman = KalmanRpsPredictor::Create(config.kalman);
  if (!kalman.ok())
    return kalman.status();
  return std::unique_ptr<HybridAutoscaler>(new HybridAutoscaler(config, function, *kalman));
}

HybridAutoscaler::HybridAutoscaler(const HybridAutoscalerConfig& config,
                                   const HasGpuFunction& function, KalmanRpsPredictor kalman)
    : config_(config), capacity_(function, config.capacity), kalman_(kalman) {}

void HybridAutoscaler::Observe(const LoadSample& sample) {
  const double backlog = sample.queued / absl::ToDoubleSeconds(config_.queue_drain);
  kalman_.Update(sample.rps + backlog);
}

PodConfig HybridAutoscaler::InitialConfig() const {
  const std::optional<PodConfig> c = capacity_.CheapestAnywhere(std::max(config_.r_min, kEps));
  if (c)
    return *c;
  return PodConfig{1, 1.0, 1.0, 0.0};
}

std::vector<ScalingAction> HybridAutoscaler::Decide(absl::Time now,
                                                    const std::vector<PodView>& pods,
                                                    const ClusterState& state) {
  wakeup_ = absl::InfiniteFuture();
  Planner plan(config_, capacity_, pods, state);
  const double r = kalman_.estimate();
  const double c_f = plan.total();
  if (pods.empty()) {
    double gap = std::max({r / config_.alpha, config_.r_min, kEps});
    plan.HorizontalUp(gap);
  } else if (r > config_.alpha * c_f + kEps) {
    double gap = r / config_.alpha - c_f;
    plan.VerticalUp(gap);
    plan.HorizontalUp(gap);
  } else if (r < config_.beta * c_f - kEps) {
    if (now < cooldown_until_) {
      wakeup_ = cooldown_until_;
    } else {
      const int min_pods = std::max(1, capacity_.function().min_instances);
      if (plan.ScaleDown(std::max(r / config_.alpha, config_.r_min), min_pods))
        cooldown_until_ = now + config_.cooldown;
    }
  }
  return plan.TakeActions();
}

}  // namespace sluice::core
