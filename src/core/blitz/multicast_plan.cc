// Algorithm 1 of BlitzScale (§5.1) as reconstructed in docs/network-model.md ("Multicast plan"):
// NVLink grouping, interference pruning, then greedy serial chains, one per selected source,
// ordered by link speed and balanced across chains.
#include "core/blitz/multicast_plan.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

#include "common/status.h"

namespace sluice::core::blitz {
namespace {

using net::Topology;

absl::Status CheckEndpoint(const Endpoint& e, const Topology& topo, absl::string_view field,
                           bool target) {
  if (e.node < 0 || e.node >= topo.num_nodes()) {
    return absl::InvalidArgumentError(absl::StrCat("multicast plan: ", field, ".node = ", e.node,
                                                   " is outside the topology (", topo.num_nodes(),
                                                   " nodes)"));
  }
  if (e.kind != Endpoint::Kind::kGpuInstance) {
    if (target) {
      return absl::InvalidArgumentError(
          absl::StrCat("multicast plan: ", field, ".kind: a target must be a GPU instance"));
    }
    return absl::OkStatus();
  }
  if (e.gpus.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("multicast plan: ", field, ".gpus: a GPU instance needs >= 1 GPU"));
  }
  for (size_t i = 0; i < e.gpus.size(); ++i) {
    if (!topo.Contains({e.node, e.gpus[i]})) {
      return absl::InvalidArgumentError(absl::StrCat("multicast plan: ", field, ".gpus[", i,
                                                     "] = ", e.gpus[i], " is outside the node (",
                                                     topo.gpus_per_node(), " GPUs)"));
    }
  }
  return absl::OkStatus();
}

// A unit of the chain search: one receiving target (leader) plus the targets of its NVLink
// domain that get the parameters from it by NVLink broadcast.
struct Unit {
  int leader = 0;
  std::vector<int> members;  // including the leader
};

std::vector<Unit> GroupTargets(const std::vector<Endpoint>& targets, const Topology& topo,
                               const PlanOptions& options) {
  std::vector<Unit> units;
  std::vector<int> unit_of_node(topo.num_nodes(), -1);
  for (int t = 0; t < static_cast<int>(targets.size()); ++t) {
    const int node = targets[t].node;
    const bool nvlink = topo.SameNvlinkDomain({node, 0}, {node, 0});
    if (options.nvlink_grouping && nvlink && unit_of_node[node] >= 0) {
      units[unit_of_node[node]].members.push_back(t);
      continue;
    }
    if (nvlink) {
      unit_of_node[node] = static_cast<int>(units.size());
    }
    units.push_back({t, {t}});
  }
  // Prefer a leader whose NIC carries no incoming serving traffic: it receives over the network.
  for (Unit& u : units) {
    for (int t : u.members) {
      if (!targets[t].incast_busy) {
        u.leader = t;
        break;
      }
    }
  }
  return units;
}

class Planner {
 public:
  Planner(const std::vector<Endpoint>& sources, const std::vector<Endpoint>& targets,
          const Topology& topo, const PlanOptions& options)
      : sources_(sources), targets_(targets), topo_(topo), options_(options) {}

  absl::StatusOr<MulticastPlan> Run();

 private:
  absl::Status CheckTargetsDisjoint() const;
  void SelectSources();
  void LocalChains();
  absl::Status PickChainSources(std::vector<int>& open_units);
  void Assign(const std::vector<int>& open_units);
  void AssignRest(const std::vector<int>& open_units, size_t cap);
  void SortChain(int s, std::vector<int>& units) const;
  void OrderAndEmit();
  double HopCap(const Endpoint& from, const Endpoint& to) const;

  const std::vector<Endpoint>& sources_;
  const std::vector<Endpoint>& targets_;
  const Topology& topo_;
  const PlanOptions& options_;
  MulticastPlan plan_;
  std::vector<Unit> units_;
  std::vector<std::vector<double>> bw_;                   // [source][unit]
  std::vector<int> usable_;                               // sources chains may start at
  std::vector<int> pruned_;                               // sources dropped for outcast
  std::vector<bool> assigned_;                            // per unit
  std::vector<std::pair<int, std::vector<int>>> chains_;  // (source, units)
  std::vector<bool> local_;  // per chain: NVLink-only chain of a pruned source
  size_t first_ = 0;         // first network chain (local chains come first)
};

absl::StatusOr<MulticastPlan> Planner::Run() {
  for (size_t i = 0; i < sources_.size(); ++i) {
    SLUICE_RETURN_IF_ERROR(CheckEndpoint(sources_[i], topo_, absl::StrCat("sources[", i, "]"),
                                         /*target=*/false));
  }
  for (size_t i = 0; i < targets_.size(); ++i) {
    SLUICE_RETURN_IF_ERROR(CheckEndpoint(targets_[i], topo_, absl::StrCat("targets[", i, "]"),
                                         /*target=*/true));
  }
  SLUICE_RETURN_IF_ERROR(CheckTargetsDisjoint());
  if (sources_.empty()) {
    return absl::InvalidArgumentError("multicast plan: no usable sources (the model has no copy)");
  }
  units_ = GroupTargets(targets_, topo_, options_);
  bw_.assign(sources_.size(), std::vector<double>(units_.size()));
  for (size_t s = 0; s < sources_.size(); ++s) {
    for (size_t u = 0; u < units_.size(); ++u) {
      bw_[s][u] = HopBandwidth(sources_[s], targets_[units_[u].leader], topo_);
    }
  }
  assigned_.assign(units_.size(), false);
  SelectSources();
  LocalChains();
  std::vector<int> open_units;
  for (int u = 0; u < static_cast<int>(units_.size()); ++u) {
    if (!assigned_[u]) {
      open_units.push_back(u);
    }
  }
  if (!open_units.empty()) {
    SLUICE_RETURN_IF_ERROR(PickChainSources(open_units));
    Assign(open_units);
  }
  OrderAndEmit();
  return std::move(plan_);
}

// A GPU receives one copy: no two targets, and no target and GPU source, share a GPU.
absl::Status Planner::CheckTargetsDisjoint() const {
  absl::flat_hash_map<std::pair<int, int>, std::string> owner;
  for (size_t i = 0; i < sources_.size(); ++i) {
    if (sources_[i].kind == Endpoint::Kind::kGpuInstance) {
      for (int g : sources_[i].gpus) {
        owner.emplace(std::make_pair(sources_[i].node, g), absl::StrCat("sources[", i, "]"));
      }
    }
  }
  for (size_t i = 0; i < targets_.size(); ++i) {
    for (size_t k = 0; k < targets_[i].gpus.size(); ++k) {
      auto [it, fresh] = owner.emplace(std::make_pair(targets_[i].node, targets_[i].gpus[k]),
                                       absl::StrCat("targets[", i, "]"));
      if (!fresh && it->second != absl::StrCat("targets[", i, "]")) {
        return absl::InvalidArgumentError(absl::StrCat("multicast plan: targets[", i, "].gpus[", k,
                                                       "] is also a GPU of ", it->second));
      }
    }
  }
  return absl::OkStatus();
}

// Algorithm 1 line 2: drop sources whose NIC already carries outgoing serving traffic, unless
// that would leave none (then keep them all and cap their hops).
void Planner::SelectSources() {
  for (int s = 0; s < static_cast<int>(sources_.size()); ++s) {
    const bool busy = options_.prune_interference && sources_[s].outcast_busy;
    (busy ? pruned_ : usable_).push_back(s);
  }
  if (usable_.empty()) {
    std::swap(usable_, pruned_);
    plan_.interference_fallback = true;
  }
  plan_.pruned_sources = static_cast<int>(pruned_.size());
}

// A pruned GPU source still feeds the targets of its own NVLink domain.
void Planner::LocalChains() {
  if (!options_.local_nvlink_from_pruned) {
    return;
  }
  for (int s : pruned_) {
    const Endpoint& src = sources_[s];
    if (src.kind != Endpoint::Kind::kGpuInstance) {
      continue;
    }
    std::vector<int> local;
    for (int u = 0; u < static_cast<int>(units_.size()); ++u) {
      const Endpoint& t = targets_[units_[u].leader];
      if (!assigned_[u] && topo_.SameNvlinkDomain({src.node, src.gpus[0]}, {t.node, t.gpus[0]})) {
        assigned_[u] = true;
        local.push_back(u);
      }
    }
    if (!local.empty()) {
      chains_.emplace_back(s, std::move(local));
      local_.push_back(true);
    }
  }
}

// Lines 4-5: candidate sources ranked by their bandwidth to the open targets; one chain per
// source (multi-chain), at most one chain per open unit.
absl::Status Planner::PickChainSources(std::vector<int>& open_units) {
  std::vector<std::pair<double, int>> ranked;  // (-score, source)
  for (int s : usable_) {
    double score = 0;
    for (int u : open_units) {
      score += std::min(bw_[s][u], 1e30);
    }
    if (score > 0) {
      ranked.emplace_back(options_.order_by_link_speed ? -score : 0.0, s);
    }
  }
  if (ranked.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("multicast plan: no usable source can reach targets[",
                     units_[open_units[0]].leader, "] (SSD sources serve their own node only)"));
  }
  std::stable_sort(ranked.begin(), ranked.end());
  const size_t k = options_.multi_chain ? std::min(ranked.size(), open_units.size()) : 1;
  for (size_t i = 0; i < k; ++i) {
    chains_.emplace_back(ranked[i].second, std::vector<int>{});
    local_.push_back(false);
  }
  return absl::OkStatus();
}

// Lines 6-10: each chain first takes its fastest open unit; the rest go, fastest-reachable
// first, to the chain whose source reaches them fastest among chains under the balance cap
// ceil(n / k). Without link-speed ordering, units go round-robin in index order.
void Planner::Assign(const std::vector<int>& open_units) {
  first_ = static_cast<size_t>(std::count(local_.begin(), local_.end(), true));
  const size_t k = chains_.size() - first_;
  if (!options_.order_by_link_speed) {
    for (size_t i = 0; i < open_units.size(); ++i) {
      size_t c = first_ + i % k;
      if (chains_[c].second.empty() && bw_[chains_[c].first][open_units[i]] <= 0) {
        c = first_;  // an SSD source with no local target: the first chain carries the unit
      }
      chains_[c].second.push_back(open_units[i]);
    }
    return;
  }
  for (size_t c = first_; c < chains_.size(); ++c) {
    const int s = chains_[c].first;
    int best = -1;
    for (int u : open_units) {
      if (!assigned_[u] && (best < 0 || bw_[s][u] > bw_[s][best])) {
        best = u;
      }
    }
    assigned_[best] = true;
    chains_[c].second.push_back(best);
  }
  AssignRest(open_units, (open_units.size() + k - 1) / k);
}

void Planner::AssignRest(const std::vector<int>& open_units, size_t cap) {
  auto bw = [&](size_t c, int u) {
    return bw_[chains_[c].first][u];
  };
  std::vector<std::pair<double, int>> rest;  // (-best bandwidth, unit)
  for (int u : open_units) {
    if (!assigned_[u]) {
      double best = 0;
      for (size_t c = first_; c < chains_.size(); ++c) {
        best = std::max(best, bw(c, u));
      }
      rest.emplace_back(-best, u);
    }
  }
  std::stable_sort(rest.begin(), rest.end());
  for (const auto& [neg_bw, u] : rest) {
    size_t pick = chains_.size();
    for (size_t c = first_; c < chains_.size(); ++c) {
      if (chains_[c].second.size() >= cap) {
        continue;
      }
      if (pick == chains_.size() || bw(c, u) > bw(pick, u) ||
          (bw(c, u) == bw(pick, u) && chains_[c].second.size() < chains_[pick].second.size())) {
        pick = c;
      }
    }
    chains_[pick].second.push_back(u);
  }
}

// Line 11: within a chain, targets by descending bandwidth from the chain's source (ties keep
// same-node targets adjacent); with pruning, targets whose NIC carries outgoing serving traffic
// go last so they need not forward.
void Planner::SortChain(int s, std::vector<int>& units) const {
  if (options_.order_by_link_speed) {
    std::stable_sort(units.begin(), units.end(), [&](int a, int b) {
      if (bw_[s][a] != bw_[s][b]) {
        return bw_[s][a] > bw_[s][b];
      }
      return std::make_pair(targets_[units_[a].leader].node, units_[a].leader) <
             std::make_pair(targets_[units_[b].leader].node, units_[b].leader);
    });
  }
  if (options_.prune_interference) {
    std::stable_partition(units.begin(), units.end(),
                          [&](int u) { return !targets_[units_[u].leader].outcast_busy; });
  }
}

void Planner::OrderAndEmit() {
  for (auto& [s, units] : chains_) {
    if (units.empty()) {
      continue;
    }
    SortChain(s, units);
    Chain chain;
    chain.source = s;
    const Endpoint* from = &sources_[s];
    for (int u : units) {
      const Endpoint& to = targets_[units_[u].leader];
      chain.targets.push_back(units_[u].leader);
      chain.hop_cap_fraction.push_back(HopCap(*from, to));
      from = &to;
    }
    plan_.chains.push_back(std::move(chain));
  }
  for (const Unit& u : units_) {
    if (u.members.size() > 1) {
      NvlinkBroadcast b;
      b.from = u.leader;
      for (int t : u.members) {
        if (t != u.leader) {
          b.to.push_back(t);
        }
      }
      plan_.broadcasts.push_back(std::move(b));
    }
  }
}

double Planner::HopCap(const Endpoint& from, const Endpoint& to) const {
  if (!options_.prune_interference || from.node == to.node) {
    return 1.0;
  }
  return from.outcast_busy || to.incast_busy ? options_.shared_nic_cap_fraction : 1.0;
}

}  // namespace

absl::StatusOr<MulticastPlan> PlanMulticast(const std::vector<Endpoint>& sources,
                                            const std::vector<Endpoint>& targets,
                                            const net::Topology& topology,
                                            const PlanOptions& options) {
  return Planner(sources, targets, topology, options).Run();
}

}  // namespace sluice::core::blitz
