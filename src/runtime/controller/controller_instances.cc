// ControllerCore: agents, placement (the DiluScheduler or the function's policy set), horizontal
// scaling (Reconcile towards `desired`), node polling and the routes version. Agent calls from
// the loop are asynchronous (http::Client); only start-up (Init) uses blocking fetches, before
// the loop has any work.
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

absl::StatusOr<NodeReport> FetchNode(const http::Endpoint& agent) {
  absl::StatusOr<http::Response> r =
      http::Fetch(agent, AgentRequest("GET", "/agent/v1/node"), absl::Seconds(2));
  if (!r.ok())
    return r.status();
  if (r->status != 200) {
    return absl::UnavailableError(
        absl::StrCat("agent ", agent.ToString(), ": HTTP ", r->status, ": ", r->body));
  }
  return ParseNodeReport(r->body);
}

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

absl::StatusOr<std::vector<NodeReport>> ControllerCore::FetchAgentsBlocking() {
  if (options_.agents.empty())
    return absl::InvalidArgumentError("no agents configured");
  core::ClusterSpec spec;
  std::vector<NodeReport> nodes;
  for (const std::string& url : options_.agents) {
    SLUICE_ASSIGN_OR_RETURN(http::Endpoint ep, http::Endpoint::Parse(url));
    const absl::Time deadline = absl::Now() + options_.agent_wait;
    absl::StatusOr<NodeReport> node = FetchNode(ep);
    while (!node.ok() && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(100));
      node = FetchNode(ep);
    }
    if (!node.ok()) {
      return absl::UnavailableError(
          absl::StrCat("agent ", url, " did not answer: ", node.status().message()));
    }
    ControllerAgent a;
    a.endpoint = ep;
    a.node = node->node;
    a.gpus = node->gpus;
    core::NodeSpec ns;
    ns.name = node->node;
    ns.gpu_count = static_cast<int>(node->gpus.size());
    if (!node->gpus.empty()) {
      ns.gpu = core::GpuSpec{node->gpus[0].name, node->gpus[0].sm_count,
                             common::Bytes(node->gpus[0].memory_bytes)};
    }
    for (size_t g = 0; g < node->gpus.size(); ++g) {
      a.gpu_ids.push_back(common::GpuId(static_cast<int64_t>(gpu_agent_.size())));
      gpu_agent_.push_back(static_cast<int>(agents_.size()));
    }
    spec.nodes.push_back(ns);
    agents_.push_back(std::move(a));
    nodes.push_back(*std::move(node));
  }
  cluster_ = std::make_unique<core::ClusterState>(spec);
  SLUICE_ASSIGN_OR_RETURN(scheduler_, core::DiluScheduler::Create(options_.scheduler));
  return nodes;
}

void ControllerCore::AdoptInstances(const std::vector<NodeReport>& nodes) {
  for (size_t a = 0; a < nodes.size(); ++a) {
    for (const ReportedInstance& ai : nodes[a].instances) {
      next_instance_id_ = std::max(next_instance_id_, ai.id + 1);
      if (IsTerminalAgentState(ai.state) || ai.state == "draining")
        continue;  // on its way out
      auto f = functions_.find(ai.function);
      const bool keep = f != functions_.end() && f->second.record.state == FunctionState::kReady &&
                        ai.id != f->second.record.profiling_instance;
      if (!keep) {
        (void)http::Fetch(
            agents_[a].endpoint,
            AgentRequest("DELETE", absl::StrCat("/agent/v1/instances/", ai.id, "?drain_ms=0")));
        continue;
      }
      AdoptOne(static_cast<int>(a), ai, f->second);
    }
  }
  ResumeFunctions();
}

void ControllerCore::ResumeFunctions() {
  for (auto it = functions_.begin(); it != functions_.end();) {
    if (it->second.record.state == FunctionState::kDeleting) {  // interrupted delete
      (void)store_.Delete(FunctionKey(it->first));
      it = functions_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto& [name, f] : functions_) {
    if (f.record.state == FunctionState::kProfiling)
      StartProfiling(f);
    if (f.record.state != FunctionState::kReady)
      continue;
    MakeScaler(f);
    const int n = static_cast<int>(Active(name).size());
    f.desired = f.record.spec.kind == FunctionKind::kTraining
                    ? n
                    : std::clamp(n, f.record.min(), f.record.max());
    if (f.record.spec.kind != FunctionKind::kTraining)
      Reconcile(f, false);
  }
  Touch();
}

void ControllerCore::AdoptOne(int agent, const ReportedInstance& ai, ControllerFunction& f) {
  ControllerInstance i;
  i.id = ai.id;
  i.function = ai.function;
  i.agent = agent;
  i.gpu_uuid = ai.gpu;
  i.confirmed = true;
  i.state = ai.state;
  i.restarts = ai.restarts;
  const ProfileInfo& p = *f.record.profile;
  // The quota the agent reports (it may have been changed live), else the profile's.
  core::SmQuota quota{ai.request > 0 ? ai.request : p.request, ai.limit > 0 ? ai.limit : p.limit,
                      ai.time_quota > 0 ? ai.time_quota : p.time_quota};
  if (!core::ValidateQuota(quota).ok())
    quota = ServingQuota(f);
  i.request = quota.request;
  i.limit = quota.limit;
  i.time_quota = quota.time_quota;
  i.batch = ai.max_batch > 0 ? ai.max_batch : p.batch;
  i.sm_share = ai.sm_share;
  if (ai.port > 0)
    i.url = absl::StrCat(agents_[agent].endpoint.host, ":", ai.port);
  // Every GPU the agent reports for it (older agents: just `gpu`), held again in the cluster.
  const std::vector<std::string> uuids = ai.gpus.empty() ? std::vector<std::string>{ai.gpu}
                                                         : ai.gpus;
  for (const std::string& uuid : uuids) {
    for (size_t g = 0; g < agents_[agent].gpus.size(); ++g) {
      if (agents_[agent].gpus[g].uuid != uuid)
        continue;
      const common::GpuId gid = agents_[agent].gpu_ids[g];
      core::Allocation alloc{common::InstanceId(ai.id), f.id, gid,
                             common::Bytes(MemoryLimitBytes(f.record.spec)), quota};
      if (cluster_->Add(alloc).ok()) {
        NotifyAdded(alloc);
        i.gpus.push_back(gid);
        i.allocated = true;
      }
    }
  }
  instances_.emplace(i.id, std::move(i));
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
