// ControllerCore: the HybridScaler path (core/policy/hybrid.h), for functions whose policy set
// makes one (HAS-GPU). At each gateway load report: Observe, then Decide over the function's pods
// and the cluster, then apply the actions in order, each committed to the ClusterState before
// it reaches an agent; an action the cluster rejects is skipped (logged), as the contract says.
#include <algorithm>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

#include "runtime/common/log.h"
#include "runtime/controller/controller_core.h"

namespace sluice::runtime {

namespace {

// The allocation `instance` holds on `gpu`, or null.
const core::Allocation* AllocationOf(const core::ClusterState& cluster, common::GpuId gpu,
                                     common::InstanceId instance) {
  for (const core::Allocation& a : cluster.gpu(gpu).allocations) {
    if (a.instance == instance)
      return &a;
  }
  return nullptr;
}

}  // namespace

std::vector<core::PodView> ControllerCore::Pods(const ControllerFunction& f) const {
  std::vector<core::PodView> pods;
  for (const ControllerInstance* i : Active(f.record.spec.name)) {
    if (!i->allocated || i->gpus.empty())
      continue;  // an adopted instance the cluster could not hold again: not the scaler's
    pods.push_back({common::InstanceId(i->id), i->gpus[0],
                    core::SmQuota{i->request, i->limit, i->time_quota}, i->batch,
                    i->state == "ready"});
  }
  return pods;
}

void ControllerCore::DriveHybrid(ControllerFunction& f, const core::LoadSample& sample,
                                 absl::Time now) {
  f.hybrid->Observe(sample);
  const std::vector<core::PodView> pods = Pods(f);
  bool added = false;
  for (const core::ScalingAction& a : f.hybrid->Decide(now, pods, *cluster_)) {
    bool applied = false;
    switch (a.kind) {
      case core::ScalingAction::Kind::kSetQuota:
        applied = ApplySetQuota(f, a);
        break;
      case core::ScalingAction::Kind::kAdd:
        applied = ApplyAdd(f, a);
        added |= applied;
        break;
      case core::ScalingAction::Kind::kRemove:
        applied = ApplyRemove(f, a);
        break;
    }
    if (!applied) {
      LogInfo("controller", "function '", f.record.spec.name, "': skipped a ",
              std::string(f.hybrid->name()), " action the cluster rejected");
    }
  }
  if (added && pods.empty()) {  // a start from zero instances
    ++f.record.cold_starts;
    (void)Persist(f);
    if (auto c = cold_starts_metric_->WithLabels({f.record.spec.name}); c.ok())
      (*c)->Inc();
  }
  f.desired = static_cast<int>(Active(f.record.spec.name).size());
  Touch();
}

bool ControllerCore::ApplySetQuota(ControllerFunction& f, const core::ScalingAction& a) {
  auto it = instances_.find(a.instance.value());
  if (it == instances_.end() || it->second.function != f.record.spec.name ||
      it->second.removing || !it->second.allocated) {
    return false;
  }
  ControllerInstance& i = it->second;
  std::vector<core::Allocation> before;
  for (common::GpuId g : i.gpus) {
    if (const core::Allocation* old = AllocationOf(*cluster_, g, a.instance))
      before.push_back(*old);
  }
  if (!cluster_->UpdateQuota(a.instance, a.quota).ok())
    return false;
  for (const core::Allocation& old : before) {
    core::Allocation now = old;
    now.quota = a.quota;
    NotifyRequota(old, now);
  }
  i.request = a.quota.request;
  i.limit = a.quota.limit;
  i.time_quota = a.quota.time_quota;
  http::Request req = AgentRequest(
      "PUT", absl::StrCat("/agent/v1/instances/", i.id, "/quota"),
      QuotaBody(a.quota.request, a.quota.limit, IsSloSensitive(f.record.spec.kind),
                MemoryLimitBytes(f.record.spec), a.quota.time_quota));
  const std::string name = f.record.spec.name;
  client_.Send(agents_[i.agent].endpoint, std::move(req), absl::Seconds(10),
               [this, name, id = i.id](absl::StatusOr<http::Response> r) {
                 if (r.ok() && r->status == 200)
                   return;
                 auto fn = functions_.find(name);
                 if (fn == functions_.end())
                   return;
                 fn->second.record.message =
                     absl::StrCat("agent refused the quota of instance ", id, ": ",
                                  r.ok() ? absl::StrCat("HTTP ", r->status, ": ", r->body)
                                         : std::string(r.status().message()));
               });
  return true;
}

bool ControllerCore::ApplyAdd(ControllerFunction& f, const core::ScalingAction& a) {
  if (a.gpu.value() < 0 || a.gpu.value() >= cluster_->gpu_count())
    return false;
  if (static_cast<int>(Active(f.record.spec.name).size()) >= f.record.max())
    return false;  // PUT /scale's max binds every scaler
  const int64_t id = NextInstanceId();
  const core::Allocation alloc{common::InstanceId(id), f.id, a.gpu,
                               common::Bytes(MemoryLimitBytes(f.record.spec)), a.quota};
  if (!cluster_->Add(alloc).ok())
    return false;
  NotifyAdded(alloc);
  Launch(f, id, {a.gpu}, a.quota, std::max(1, a.batch), /*restart=*/true);
  return true;
}

bool ControllerCore::ApplyRemove(ControllerFunction& f, const core::ScalingAction& a) {
  auto it = instances_.find(a.instance.value());
  if (it == instances_.end() || it->second.function != f.record.spec.name ||
      it->second.removing || it->second.profiling) {
    return false;
  }
  ScaleIn(it->second.id);  // drain before delete, as for every scale-in
  return true;
}

double ControllerCore::CapacityOf(const ControllerFunction& f, const ControllerInstance& i) const {
  if (!f.record.profile)
    return 0;
  const ProfileInfo& p = *f.record.profile;
  const bool as_profiled = i.request == p.request && i.limit == p.limit &&
                           i.time_quota == p.time_quota && i.batch == p.batch;
  if (as_profiled || !f.latency)
    return p.capacity_rps;
  const double seconds =
      absl::ToDoubleSeconds(f.latency->BatchLatency(i.batch, i.limit, i.time_quota));
  return seconds > 0 ? i.batch / seconds : p.capacity_rps;
}

}  // namespace sluice::runtime
