// ControllerCore across machines (issue 12): leader election over the store, nodes joining and
// leaving through /sluice/nodes/ (the cluster rebuilt each time; a lost node's instances
// re-placed elsewhere), and the nodes/leader endpoints. Same class as controller_core.cc; runs on
// the controller's one loop (store calls block it briefly, as the registry's writes do).
#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"

#include "common/status.h"
#include "runtime/common/log.h"
#include "runtime/controller/controller_core.h"

namespace sluice::runtime {

using nlohmann::json;

namespace {

core::NodeSpec NodeSpecOf(const ControllerAgent& a) {
  core::NodeSpec ns;
  ns.name = a.node;
  ns.gpu_count = static_cast<int>(a.gpus.size());
  if (!a.gpus.empty()) {
    ns.gpu = core::GpuSpec{a.gpus[0].name, a.gpus[0].sm_count,
                           common::Bytes(a.gpus[0].memory_bytes)};
  }
  return ns;
}

}  // namespace

void ControllerCore::StartCluster(int port) {
  const std::string me = absl::StrCat(options_.host, ":", port);
  self_ = {options_.id.empty() ? me : options_.id,
           options_.advertise.empty() ? me : options_.advertise};
  if (!options_.elect && !options_.discover_nodes)
    return;
  if (options_.elect) {
    election_ = std::make_unique<LeaderElection>(store_, self_, options_.leader_ttl);
    LogInfo("controller", "'", self_.id, "' follows; campaigns for ", kLeaderKey, " (ttl ",
            absl::FormatDuration(options_.leader_ttl), ")");
  }
  ClusterTick();
}

void ControllerCore::ClusterTick() {
  if (stopping_)
    return;
  if (election_ && !deposed_) {
    switch (election_->Tick(loop_.Now())) {
      case LeaderElection::Change::kElected:
        BecomeLeader();
        break;
      case LeaderElection::Change::kDeposed:
        // Our lease is gone, so another controller may lead: stop acting at once. This
        // process's state is stale; it answers 503 until restarted (as a follower).
        LogWarning("controller", "'", self_.id, "' lost its leader lease: no longer acting; ",
                   "restart it to follow again");
        deposed_ = true;
        acting_ = false;
        if (options_.on_deposed)
          options_.on_deposed();
        break;
      case LeaderElection::Change::kNone:
        break;
    }
  }
  if (options_.discover_nodes) {
    if (Acting() && !deposed_) {
      SyncNodes();
    } else {
      SyncNodesMirror();  // a follower's status page lists them
    }
  }
  loop_.RunAfter(options_.cluster_tick, [this] { ClusterTick(); });
}

void ControllerCore::ResetForInit() {
  instances_.clear();
  functions_.clear();
  pipelines_.clear();
  agents_.clear();
  gpu_agent_.clear();
  joining_.clear();
  cluster_.reset();
}

void ControllerCore::BecomeLeader() {
  const absl::Time t0 = absl::Now();
  LogInfo("controller", "'", self_.id, "' leads: adopting the running instances");
  ResetForInit();
  absl::Status s = Init();
  if (!s.ok()) {
    LogWarning("controller", "cannot lead (", s.message(), "): resigning, will campaign again");
    election_->Resign();
    ResetForInit();
    return;
  }
  // Gateways keep the previous leader's table until they see a newer version: start above it.
  routes_version_ = std::max(routes_version_, absl::ToUnixMillis(absl::Now()));
  acting_ = true;
  elected_at_ = loop_.Now();
  Touch();
  StartPolling();
  LogInfo("controller", "'", self_.id, "' leading with ", instances_.size(),
          " adopted instances on ", agents_.size(), " nodes (start-up ",
          absl::FormatDuration(absl::Now() - t0), ")");
}

void ControllerCore::SyncNodesMirror() {
  if (nodes_mirror_ == nullptr)
    nodes_mirror_ = std::make_unique<PrefixMirror>(store_, kNodesPrefix);
  if (absl::StatusOr<std::vector<PrefixMirror::Change>> c = nodes_mirror_->Sync(); !c.ok())
    LogWarning("controller", "listing the nodes: ", c.status().message());
}

std::vector<std::pair<std::string, std::string>> ControllerCore::DiscoveredNodes() const {
  std::vector<std::pair<std::string, std::string>> out;
  if (nodes_mirror_ == nullptr)
    return out;
  for (const auto& [key, value] : nodes_mirror_->items()) {
    absl::StatusOr<NodeRecord> rec = ParseNodeRecord(value);
    if (rec.ok())
      out.emplace_back(key.substr(std::strlen(kNodesPrefix)), rec->address);
    else
      LogWarning("controller", key, ": ", rec.status().message());
  }
  return out;
}

void ControllerCore::SyncNodes() {
  if (nodes_mirror_ == nullptr)
    nodes_mirror_ = std::make_unique<PrefixMirror>(store_, kNodesPrefix);
  absl::StatusOr<std::vector<PrefixMirror::Change>> changes = nodes_mirror_->Sync();
  if (!changes.ok())
    return;  // the store is away: nodes stay as they are until it answers
  for (const PrefixMirror::Change& c : *changes) {
    const std::string key = c.key.substr(std::strlen(kNodesPrefix));
    int agent = -1;
    for (size_t a = 0; a < agents_.size(); ++a) {
      if (agents_[a].key == key)
        agent = static_cast<int>(a);
    }
    if (!c.value.has_value()) {
      joining_.erase(key);
      if (agent >= 0 && !agents_[agent].lost)
        LoseNode(agent);
      continue;
    }
    absl::StatusOr<NodeRecord> rec = ParseNodeRecord(*c.value);
    if (!rec.ok()) {
      LogWarning("controller", c.key, ": ", rec.status().message());
      continue;
    }
    // A re-put with the same address is the agent renewing its registration: nothing changes.
    if (agent >= 0 && !agents_[agent].lost && agents_[agent].endpoint.ToString() == rec->address)
      continue;
    if (agent >= 0 && !agents_[agent].lost)
      LoseNode(agent);  // same id, new address: the old one is gone
    joining_.try_emplace(key, false);
  }
  for (const auto& [key, address] : DiscoveredNodes()) {
    auto it = joining_.find(key);
    if (it != joining_.end() && !it->second)
      JoinNode(key, address);
  }
}

void ControllerCore::JoinNode(const std::string& key, const std::string& address) {
  absl::StatusOr<http::Endpoint> ep = http::Endpoint::Parse(address);
  if (!ep.ok()) {
    LogWarning("controller", "node '", key, "': bad address: ", ep.status().message());
    joining_.erase(key);
    return;
  }
  joining_[key] = true;
  client_.Send(*ep, AgentRequest("GET", "/agent/v1/node"), absl::Seconds(2),
               [this, key, ep = *ep, sent = loop_.Now()](absl::StatusOr<http::Response> r) {
                 auto it = joining_.find(key);
                 if (it == joining_.end())
                   return;  // it left meanwhile
                 it->second = false;  // a failure is retried on the next tick
                 if (!r.ok() || r->status != 200)
                   return;
                 absl::StatusOr<NodeReport> node = ParseNodeReport(r->body);
                 if (!node.ok())
                   return;
                 joining_.erase(it);
                 const int agent = AddAgent(ep, key, *node);
                 if (absl::Status s = RebuildCluster(); !s.ok())
                   LogWarning("controller", "cluster rebuild: ", s.message());
                 LogInfo("controller", "node '", key, "' joined at ", ep.ToString(), " with ",
                         node->gpus.size(), " GPUs");
                 ApplyNode(agent, *node, sent);  // instances that are not ours are stopped
                 for (auto& [name, f] : functions_)
                   Reconcile(f, /*cold_start=*/true);  // e.g. unschedulable until now
                 Touch();
               });
}

int ControllerCore::AddAgent(const http::Endpoint& ep, const std::string& key,
                             const NodeReport& node) {
  int index = -1;
  for (size_t a = 0; a < agents_.size() && !key.empty(); ++a) {
    if (agents_[a].key == key)
      index = static_cast<int>(a);  // a lost node rejoining keeps its index
  }
  if (index < 0) {
    index = static_cast<int>(agents_.size());
    agents_.emplace_back();
  }
  ControllerAgent& a = agents_[index];
  a.endpoint = ep;
  a.node = node.node;
  a.gpus = node.gpus;
  a.gpu_ids.clear();  // numbered by RebuildCluster
  a.key = key;
  a.lost = false;
  return index;
}

void ControllerCore::LoseNode(int agent) {
  ControllerAgent& a = agents_[agent];
  a.lost = true;
  std::map<std::string, int> lost;  // serving instances lost, per function
  std::vector<int64_t> ids;
  for (const auto& [id, i] : instances_) {
    if (i.agent == agent)
      ids.push_back(id);
  }
  for (int64_t id : ids) {
    const ControllerInstance& i = instances_.at(id);
    if (!i.profiling && !i.removing)
      ++lost[i.function];
    Erase(id);
  }
  if (absl::Status s = RebuildCluster(); !s.ok())
    LogWarning("controller", "cluster rebuild: ", s.message());
  LogWarning("controller", "node '", a.key, "' (", a.endpoint.ToString(), ") left: ", ids.size(),
             " instances lost");
  const absl::Time now = loop_.Now();
  for (const auto& [name, n] : lost) {
    auto f = functions_.find(name);
    if (f == functions_.end())
      continue;
    if (auto c = replaced_metric_->WithLabels({name}); c.ok())
      (*c)->Inc(n);
    const int64_t first_new = next_instance_id_;
    Reconcile(f->second, /*cold_start=*/true);
    int started = 0;
    for (auto& [id, i] : instances_) {
      if (id >= first_new && i.function == name) {
        i.replacing_since = now;
        ++started;
      }
    }
    LogInfo("controller", "function '", name, "': ", n, " instances lost with node '", a.key,
            "', ", started, " replacements started elsewhere");
  }
  Touch();
}

absl::Status ControllerCore::RebuildCluster() {
  core::ClusterSpec spec;
  std::map<int64_t, common::GpuId> remap;  // old GPU id -> new
  gpu_agent_.clear();
  for (size_t a = 0; a < agents_.size(); ++a) {
    ControllerAgent& ag = agents_[a];
    std::vector<common::GpuId> ids;
    if (!ag.lost) {
      spec.nodes.push_back(NodeSpecOf(ag));
      for (size_t g = 0; g < ag.gpus.size(); ++g) {
        const common::GpuId id(static_cast<int64_t>(gpu_agent_.size()));
        if (g < ag.gpu_ids.size())
          remap.emplace(ag.gpu_ids[g].value(), id);
        ids.push_back(id);
        gpu_agent_.push_back(static_cast<int>(a));
      }
    }
    ag.gpu_ids = std::move(ids);
  }
  std::vector<core::Allocation> kept;
  if (cluster_) {
    for (const core::GpuState& g : cluster_->gpus()) {
      for (core::Allocation a : g.allocations) {
        auto it = remap.find(a.gpu.value());
        if (it == remap.end())
          continue;
        a.gpu = it->second;
        kept.push_back(a);
      }
    }
  }
  cluster_ = std::make_unique<core::ClusterState>(spec);
  SLUICE_ASSIGN_OR_RETURN(scheduler_, core::DiluScheduler::Create(options_.scheduler));
  for (const core::Allocation& a : kept) {
    if (cluster_->Add(a).ok())
      scheduler_->OnAdded(a, *cluster_);
  }
  for (auto& [id, i] : instances_) {
    std::vector<common::GpuId> gpus;
    for (common::GpuId g : i.gpus) {
      if (auto it = remap.find(g.value()); it != remap.end())
        gpus.push_back(it->second);
    }
    i.gpus = std::move(gpus);
    i.allocated = i.allocated && !i.gpus.empty();
  }
  for (auto& [name, f] : functions_) {
    if (!f.policy)
      continue;  // plain dilu: the DiluScheduler above
    SLUICE_RETURN_IF_ERROR(MakePolicy(f));  // replays the allocations into its indices
    if ((f.scaler || f.hybrid) && !f.llm)
      MakeScaler(f);  // a set's scaler may borrow the set it came from
  }
  return absl::OkStatus();
}

void ControllerCore::ReportReplacement(ControllerInstance& i) {
  const double seconds = absl::ToDoubleSeconds(loop_.Now() - i.replacing_since);
  i.replacing_since = absl::InfinitePast();
  if (auto g = replacement_seconds_metric_->WithLabels({i.function}); g.ok())
    (*g)->Set(seconds);
  LogInfo("controller", "instance ", i.id, " of '", i.function, "' replaces one lost with its ",
          "node: ready after ", seconds, " s (a cold start)");
}

http::Response ControllerCore::Leader() const {
  json leader = nullptr;
  if (!options_.elect || acting_) {
    leader = json{{"id", self_.id}, {"address", self_.address}};
  } else if (election_ && election_->leader()) {
    leader = json{{"id", election_->leader()->id}, {"address", election_->leader()->address}};
  }
  const char* role = !options_.elect && !options_.discover_nodes ? "single"
                     : Acting()                                   ? "leader"
                                                                  : "follower";
  return http::JsonResponse(
      200, json{{"self", self_.id}, {"role", role}, {"leader", std::move(leader)}}.dump());
}

http::Response ControllerCore::NotLeader() const {
  json body;
  if (election_ && election_->leader() && !deposed_) {
    const LeaderRecord& l = *election_->leader();
    body = json{{"error", absl::StrCat("controller '", self_.id, "' does not lead: '", l.id,
                                       "' at ", l.address, " does; send this there")},
                {"leader", l.address}};
  } else {
    body = json{{"error", absl::StrCat("controller '", self_.id, "' does not lead and no ",
                                       "leader is known yet (election under way); retry")},
                {"leader", nullptr}};
  }
  return http::JsonResponse(503, body.dump());
}

http::Response ControllerCore::Nodes() const {
  json nodes = json::array();
  if (Acting()) {
    std::map<int, int> counts;
    for (const auto& [id, i] : instances_)
      ++counts[i.agent];
    for (size_t a = 0; a < agents_.size(); ++a) {
      const ControllerAgent& ag = agents_[a];
      nodes.push_back({{"id", ag.key.empty() ? ag.node : ag.key},
                       {"node", ag.node},
                       {"address", ag.endpoint.ToString()},
                       {"gpus", ag.gpus.size()},
                       {"state", ag.lost ? "lost" : "live"},
                       {"instances", counts[static_cast<int>(a)]}});
    }
    for (const auto& [key, in_flight] : joining_)
      nodes.push_back({{"id", key}, {"state", "joining"}, {"instances", 0}});
  } else if (nodes_mirror_) {  // a follower: what the store says, no instances
    for (const auto& [key, value] : nodes_mirror_->items()) {
      absl::StatusOr<NodeRecord> rec = ParseNodeRecord(value);
      if (!rec.ok())
        continue;
      nodes.push_back({{"id", rec->id}, {"address", rec->address}, {"gpus", rec->gpus},
                       {"state", "live"}, {"instances", nullptr}});
    }
  }
  json body = json::parse(Leader().body);
  body["nodes"] = std::move(nodes);
  return http::JsonResponse(200, body.dump());
}

}  // namespace sluice::runtime
