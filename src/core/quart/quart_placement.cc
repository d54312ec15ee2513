// QuartPlacement (see quart_placement.h).
#include "core/quart/quart_placement.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace sluice::core {

absl::StatusOr<std::unique_ptr<QuartPlacement>> QuartPlacement::Create(
    const DispersedPlacementConfig& config) {
  absl::StatusOr<DispersedPlacement> rule = DispersedPlacement::Create(config);
  if (!rule.ok())
    return rule.status();
  return std::unique_ptr<QuartPlacement>(new QuartPlacement(*rule));
}

void QuartPlacement::Bind(const ClusterState& state) {
  if (bound_ == &state)
    return;
  bound_ = &state;
  index_ = DispersedNodeIndex(state.node_count());
  keys_.assign(state.node_count(), 0);
  // Instances committed to another state object are forgotten unless this one holds them.
  for (auto it = committed_.begin(); it != committed_.end();) {
    const auto cur = it++;
    const std::vector<GpuId> gpus = state.GpusOf(cur->first);
    if (gpus.empty()) {
      committed_.erase(cur);
      continue;
    }
    cur->second.node = state.gpu(gpus.front()).node;
    if (cur->second.key)
      ++keys_[cur->second.node.value()];
  }
  for (int j = 0; j < state.node_count(); ++j)
    RefreshNode(NodeId(j), state);
}

void QuartPlacement::RefreshNode(NodeId node, const ClusterState& state) {
  int idle = 0;
  for (GpuId g : state.gpus_of(node)) {
    if (!state.gpu(g).active())
      ++idle;
  }
  index_.Set(static_cast<int>(node.value()), idle, keys_[node.value()]);
}

std::vector<GpuId> QuartPlacement::FittingGpus(NodeId node, int gpus, Bytes memory,
                                               const ClusterState& state) {
  std::vector<GpuId> out;
  for (GpuId g : state.gpus_of(node)) {
    const GpuState& gs = state.gpu(g);
    if (!gs.active() && gs.memory_free() >= memory)
      out.push_back(g);
    if (static_cast<int>(out.size()) == gpus)
      break;
  }
  return out;
}

int QuartPlacement::ChooseFitting(const InstanceDemand& demand, const std::vector<int>& caching,
                                  const ClusterState& state) const {
  DispersedNodeIndex fitting(state.node_count());
  for (int j = 0; j < state.node_count(); ++j) {
    const int fit = static_cast<int>(
        FittingGpus(NodeId(j), state.gpu_count(), demand.memory_per_gpu, state).size());
    fitting.Set(j, fit, keys_[j]);
  }
  return rule_.Choose(fitting, demand.key_stage, demand.gpus, caching);
}

absl::StatusOr<std::vector<GpuId>> QuartPlacement::Place(const InstanceDemand& demand,
                                                         const ClusterState& state) {
  if (demand.gpus < 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "quart: field 'gpus': instance ", demand.instance.value(), " asks for ", demand.gpus));
  }
  if (demand.memory_per_gpu.count() < 0) {
    return absl::InvalidArgumentError(absl::StrCat("quart: field 'memory_per_gpu': instance ",
                                                   demand.instance.value(), " is negative"));
  }
  Bind(state);
  std::vector<int> caching;
  for (NodeId n : demand.cached_on) {
    if (n.value() >= 0 && n.value() < state.node_count())
      caching.push_back(static_cast<int>(n.value()));
  }
  int node = rule_.Choose(index_, demand.key_stage, demand.gpus, caching);
  std::vector<GpuId> gpus;
  if (node >= 0)
    gpus = FittingGpus(NodeId(node), demand.gpus, demand.memory_per_gpu, state);
  if (static_cast<int>(gpus.size()) < demand.gpus) {
    // The chosen node's idle GPUs are too small for this instance: choose among fitting ones.
    node = ChooseFitting(demand, caching, state);
    gpus = node >= 0 ? FittingGpus(NodeId(node), demand.gpus, demand.memory_per_gpu, state)
                     : std::vector<GpuId>();
  }
  if (node < 0 || static_cast<int>(gpus.size()) < demand.gpus) {
    return absl::ResourceExhaustedError(
        absl::StrCat("quart: no node with ", demand.gpus, " idle GPU(s) of ",
                     demand.memory_per_gpu.mib(), " MiB for instance ", demand.instance.value()));
  }
  pending_[demand.instance] = demand.key_stage;
  return gpus;
}

void QuartPlacement::OnAdded(const Allocation& a, const ClusterState& state) {
  const NodeId node = state.gpu(a.gpu).node;
  if (!committed_.contains(a.instance)) {
    bool key = false;
    if (auto it = pending_.find(a.instance); it != pending_.end()) {
      key = it->second;
      pending_.erase(it);
    }
    committed_[a.instance] = {node, key};
    if (bound_ == &state && key)
      ++keys_[node.value()];
  }
  if (bound_ != &state) {
    Bind(state);  // a rebuild reads the committed state, this allocation included
    return;
  }
  RefreshNode(node, state);
}

void QuartPlacement::OnRemoved(const Allocation& a, const ClusterState& state) {
  if (bound_ != &state) {
    Bind(state);
    return;
  }
  const NodeId node = state.gpu(a.gpu).node;
  if (auto it = committed_.find(a.instance);
      it != committed_.end() && state.GpusOf(a.instance).empty()) {
    if (it->second.key)
      keys_[it->second.node.value()] = std::max(0, keys_[it->second.node.value()] - 1);
    RefreshNode(it->second.node, state);
    committed_.erase(it);
  }
  RefreshNode(node, state);
}

}  // namespace sluice::core
