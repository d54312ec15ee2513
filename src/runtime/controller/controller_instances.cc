// ControllerCore: agents, placement (the DiluScheduler or the function's policy set), horizontal
// scaling (Reconcile towards `desired`), node polling and the routes version. Agent calls from
// the loop are asynchronous (http::Client); start-up's blocking fetches and adoption live in
// controller_adopt.cc.
#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

#include "common/status.h"
#include "core/serving/scale_in.h"
#include "runtime/controller/controller_core.h"
#include "runtime/controller/scale_plan.h"

namespace sluice::runtime {

using nlohmann::json;

namespace {

bool Routable(const ControllerInstance& i) {
  return !i.removing && !i.profiling &&
         (i.state == "starting" || i.state == "ready" || i.state == "restarting");
}

}  // namespace

std::vector<std::string> GpuUuidsOn(const ControllerAgent& a,
                                    const std::vector<common::GpuId>& ids) {
  std::vector<std::string> uuids;
  for (common::GpuId id : ids) {
    for (size_t g = 0; g < a.gpu_ids.size() && g < a.gpus.size(); ++g) {
      if (a.gpu_ids[g] == id)
        uuids.push_back(a.gpus[g].uuid);
    }
  }
  return uuids;
}

std::vector<const ControllerInstance*> ControllerCore::Active(const std::string& function) const {
  std::vector<const ControllerInstance*> out;
  for (const auto& [id, i] : instances_) {
    if (i.function == function && Routable(i))
      out.push_back(&i);
  }
  return out;
}

void ControllerCore::Reconcile(ControllerFunction& f, bool cold_start) {
  if (f.record.state != FunctionState::kReady)
    return;
  if (f.llm)
    return ReconcileLlm(f);  // P/D pools (controller_llm.cc)
  const std::vector<const ControllerInstance*> active = Active(f.record.spec.name);
  const int n = static_cast<int>(active.size());
  if (f.desired > n) {
    if (cold_start && n == 0) {
      ++f.record.cold_starts;
      (void)Persist(f);
      if (auto c = cold_starts_metric_->WithLabels({f.record.spec.name}); c.ok())
        (*c)->Inc();
      // The window still holds the idle samples that scaled to zero; judged against n = 1 they
      // would scale the new instance in at once, so the window restarts with it.
      if (f.scaler)
        MakeScaler(f);
    }
    for (int k = n; k < f.desired; ++k) {
      if (!StartServing(f, /*restart=*/true))
        break;
    }
  } else if (f.desired < n) {
    std::vector<core::ScaleInCandidate> candidates;
    for (const ControllerInstance* i : active) {
      candidates.push_back({i->id, i->state == "ready", i->in_flight});
    }
    for (int64_t id : core::PickScaleIn(std::move(candidates), n - f.desired))
      ScaleIn(id);
    f.unschedulable = false;
  } else {
    f.unschedulable = false;
  }
  Touch();
}

absl::StatusOr<std::vector<common::GpuId>> ControllerCore::Allocate(ControllerFunction& f,
                                                                    int64_t id, core::SmQuota quota,
                                                                    bool profiling) {
  const FunctionSpec& spec = f.record.spec;
  core::InstanceDemand d;
  d.function = f.id;
  d.instance = common::InstanceId(id);
  d.kind = spec.kind == FunctionKind::kTraining ? core::FunctionKind::kTraining
           : spec.kind == FunctionKind::kLlm    ? core::FunctionKind::kLlmInference
                                                : core::FunctionKind::kInference;
  d.gpus = spec.gpus;
  d.memory_per_gpu = common::Bytes(MemoryLimitBytes(spec));
  d.quota = quota;
  d.same_node = spec.gpus > 1;  // one agent starts the process
  d.pipeline_stage = spec.stage_of ? spec.stage_of->index : -1;  // controller_pipeline.cc
  d.key_stage = f.key_stage;
  d.cached_on = CachedOn(spec);  // controller_pipeline.cc: agents' parameter stores
  // Profiling trials are the controller's own business: always the DiluScheduler.
  core::PlacementPolicy& placement =
      profiling || !f.policy ? static_cast<core::PlacementPolicy&>(*scheduler_)
                             : f.policy->placement();
  absl::StatusOr<std::vector<common::GpuId>> gpus = placement.Place(d, *cluster_);
  if (!gpus.ok() && profiling) {
    // No idle GPU for an exclusive trial: share the least requested one rather than fail.
    const core::GpuState* best = nullptr;
    for (const core::GpuState& g : cluster_->gpus()) {
      if (g.memory_free() >= d.memory_per_gpu && (!best || g.sum_request < best->sum_request)) {
        best = &g;
      }
    }
    if (best == nullptr || spec.gpus != 1)
      return gpus.status();
    gpus = std::vector<common::GpuId>{best->id};
  }
  if (!gpus.ok())
    return gpus.status();
  for (common::GpuId g : *gpus) {
    core::Allocation a{common::InstanceId(id), f.id, g, d.memory_per_gpu, quota};
    SLUICE_RETURN_IF_ERROR(cluster_->Add(a));
    NotifyAdded(a);
  }
  return gpus;
}

void ControllerCore::Release(ControllerInstance& i) {
  if (!i.allocated)
    return;
  for (const core::Allocation& a : cluster_->Remove(common::InstanceId(i.id)))
    NotifyRemoved(a);
  i.allocated = false;
}

void ControllerCore::NotifyAdded(const core::Allocation& a) {
  scheduler_->OnAdded(a, *cluster_);
  for (auto& [name, f] : functions_) {
    if (f.policy)
      f.policy->placement().OnAdded(a, *cluster_);
  }
}

void ControllerCore::NotifyRemoved(const core::Allocation& a) {
  scheduler_->OnRemoved(a, *cluster_);
  for (auto& [name, f] : functions_) {
    if (f.policy)
      f.policy->placement().OnRemoved(a, *cluster_);
  }
}

void ControllerCore::NotifyRequota(const core::Allocation& before, const core::Allocation& after) {
  scheduler_->OnRequota(before, after, *cluster_);
  for (auto& [name, f] : functions_) {
    if (f.policy)
      f.policy->placement().OnRequota(before, after, *cluster_);
  }
}

core::SmQuota ControllerCore::ServingQuota(const ControllerFunction& f) const {
  const ProfileInfo& p = *f.record.profile;
  if (!f.policy)
    return {p.request, p.limit, p.time_quota};
  return f.policy->QuotaFor(Traits(f));
}

int64_t ControllerCore::NextInstanceId() {
  const int64_t id = next_instance_id_++;
  (void)store_.Put("meta/next_instance_id", absl::StrCat(next_instance_id_));
  return id;
}

bool ControllerCore::StartServing(ControllerFunction& f, bool restart, const std::string& role) {
  const int64_t id = NextInstanceId();
  const core::SmQuota quota = ServingQuota(f);
  absl::StatusOr<std::vector<common::GpuId>> gpus = Allocate(f, id, quota, /*profiling=*/false);
  if (!gpus.ok()) {
    f.unschedulable = true;
    f.record.message = absl::StrCat("unschedulable: ", gpus.status().message());
    Touch();
    return false;
  }
  f.unschedulable = false;
  if (absl::StartsWith(f.record.message, "unschedulable"))
    f.record.message.clear();
  Launch(f, id, *gpus, quota, f.record.profile->batch, restart, role);
  return true;
}

void ControllerCore::Launch(ControllerFunction& f, int64_t id,
                            const std::vector<common::GpuId>& gpus, core::SmQuota quota,
                            int batch, bool restart, const std::string& role) {
  const int agent = gpu_agent_[gpus[0].value()];
  const ControllerAgent& a = agents_[agent];
  ControllerInstance i;
  i.id = id;
  i.function = f.record.spec.name;
  i.agent = agent;
  i.gpus = gpus;
  const std::vector<std::string> uuids = GpuUuidsOn(a, gpus);  // same_node: all on `a`
  i.gpu_uuid = uuids.empty() ? "" : uuids[0];
  i.request = quota.request;
  i.limit = quota.limit;
  i.time_quota = quota.time_quota;
  i.batch = batch;
  i.allocated = true;
  i.role = role;
  StartInstanceArgs args{id,    i.gpu_uuid, quota.request, quota.limit,
                         restart, batch,    uuids,         quota.time_quota};
  http::Request req =
      AgentRequest("POST", "/agent/v1/instances",
                   StartInstanceBody(SpecForRole(f.record.spec, role), args));
  instances_.emplace(id, std::move(i));
  client_.Send(a.endpoint, std::move(req), absl::Seconds(10),
               [this, id](absl::StatusOr<http::Response> r) {
                 auto it = instances_.find(id);
                 if (it == instances_.end())
                   return;
                 if (r.ok() && r->status == 201) {
                   it->second.confirmed = true;
                   it->second.confirmed_at = std::min(it->second.confirmed_at, loop_.Now());
                   return;
                 }
                 auto fn = functions_.find(it->second.function);
                 if (fn != functions_.end()) {
                   fn->second.record.message =
                       absl::StrCat("agent refused instance ", id, ": ",
                                    r.ok() ? absl::StrCat("HTTP ", r->status, ": ", r->body)
                                           : std::string(r.status().message()));
                 }
                 Erase(id);
               });
  Touch();
}

void ControllerCore::ScaleIn(int64_t id) {
  auto it = instances_.find(id);
  if (it == instances_.end() || it->second.removing)
    return;
  it->second.removing = true;
  Touch();  // the gateway drops it from its routes before the agent drains it
  loop_.RunAfter(options_.drain_grace, [this, id] { SendDelete(id, options_.drain_timeout); });
}

void ControllerCore::SendDelete(int64_t id, absl::Duration drain) {
  auto it = instances_.find(id);
  if (it == instances_.end())
    return;
  http::Request req = AgentRequest(
      "DELETE",
      absl::StrCat("/agent/v1/instances/", id, "?drain_ms=", absl::ToInt64Milliseconds(drain)));
  client_.Send(agents_[it->second.agent].endpoint, std::move(req), absl::Seconds(10),
               [this, id](absl::StatusOr<http::Response> r) {
                 auto found = instances_.find(id);
                 if (found == instances_.end())
                   return;
                 Release(found->second);
                 // 404: the agent no longer knows it; otherwise the poll sees it stop.
                 if (!r.ok() || r->status == 404 || !found->second.confirmed)
                   Erase(id);
               });
}

void ControllerCore::Erase(int64_t id) {
  auto it = instances_.find(id);
  if (it == instances_.end())
    return;
  Release(it->second);
  instances_.erase(it);
  Touch();
}

}  // namespace sluice::runtime
