// ControllerCore's start-up: fetching every agent's node report (blocking, before the loop has
// work), adopting the instances the agents still run and resuming the functions the store knows.
// Split from controller_instances.cc (same class); runs on the controller's one loop.
#include <algorithm>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

#include "common/status.h"
#include "runtime/common/log.h"
#include "runtime/controller/controller_core.h"

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

}  // namespace

absl::StatusOr<std::vector<NodeReport>> ControllerCore::FetchAgentsBlocking() {
  // Discovered nodes get one try each: a node that does not answer yet joins on a later tick
  // (controller_cluster.cc), so a dead node cannot hold up a new leader's start.
  const bool discover = options_.discover_nodes;
  std::vector<std::pair<std::string, std::string>> targets;  // (node key, address)
  if (discover) {
    SyncNodesMirror();  // the nodes as the store lists them now
    targets = DiscoveredNodes();
  } else {
    for (const std::string& url : options_.agents)
      targets.emplace_back("", url);
    if (targets.empty())
      return absl::InvalidArgumentError("no agents configured");
  }
  std::vector<NodeReport> nodes;  // parallel to agents_
  for (const auto& [key, url] : targets) {
    absl::StatusOr<http::Endpoint> ep = http::Endpoint::Parse(url);
    if (!ep.ok() && discover) {
      LogWarning("controller", "node '", key, "': bad address: ", ep.status().message());
      continue;
    }
    SLUICE_RETURN_IF_ERROR(ep.status());
    const absl::Time deadline = absl::Now() + (discover ? absl::ZeroDuration()
                                                        : options_.agent_wait);
    absl::StatusOr<NodeReport> node = FetchNode(*ep);
    while (!node.ok() && absl::Now() < deadline) {
      absl::SleepFor(absl::Milliseconds(100));
      node = FetchNode(*ep);
    }
    if (!node.ok() && discover) {
      joining_[key] = false;  // retried by the node watch
      continue;
    }
    if (!node.ok()) {
      return absl::UnavailableError(
          absl::StrCat("agent ", url, " did not answer: ", node.status().message()));
    }
    AddAgent(*ep, key, *node);
    nodes.push_back(*std::move(node));
  }
  SLUICE_RETURN_IF_ERROR(RebuildCluster());
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
  i.confirmed_at = absl::InfinitePast();  // listed by the report it is adopted from
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

}  // namespace sluice::runtime
