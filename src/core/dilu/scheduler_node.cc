// DiluScheduler, multi-GPU demands that must stay on one node (data-parallel training workers):
// the three tiers of Algorithm 1 lifted from GPUs to nodes.
#include <algorithm>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"

#include "core/dilu/scheduler.h"

namespace sluice::core {

std::vector<int> DiluScheduler::BestOnNode(int node, int n, const Room& need, Order order,
                                           const ClusterState& state, double* cost) const {
  std::vector<std::pair<double, int>> fitting;  // (key, gpu)
  for (GpuId id : state.gpus_of(NodeId(node))) {
    const int g = static_cast<int>(id.value());
    const GpuState& gs = state.gpu(id);
    if (hidden_[g] || !Fits(RoomOf(gs), need))
      continue;
    fitting.emplace_back(OrderKey(order, gs, need), g);
  }
  if (static_cast<int>(fitting.size()) < n)
    return {};
  std::sort(fitting.begin(), fitting.end());
  std::vector<int> chosen;
  *cost = 0;
  for (int i = 0; i < n; ++i) {
    chosen.push_back(fitting[i].second);
    *cost += fitting[i].first;
  }
  return chosen;
}

std::vector<int> DiluScheduler::BestNodeAmong(std::vector<int>& nodes, int n, const Room& need,
                                              Order order, const ClusterState& state) const {
  std::sort(nodes.begin(), nodes.end());
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  std::vector<int> best;
  double best_cost = 0;
  for (int node : nodes) {
    double cost = 0;
    std::vector<int> chosen = BestOnNode(node, n, need, order, state, &cost);
    if (chosen.empty())
      continue;
    if (best.empty() || cost < best_cost) {  // nodes ascend, so ties keep the lower node
      best = std::move(chosen);
      best_cost = cost;
    }
  }
  return best;
}

std::vector<int> DiluScheduler::PickIdleNode(int n, const Room& need, Order order,
                                             const ClusterState& state) const {
  if (need.request > config_.omega + kShareEpsilon || need.limit > config_.gamma + kShareEpsilon) {
    return {};
  }
  // (idle count, model preference, node): fewest idle GPUs first keeps empty nodes whole.
  std::tuple<int, double, int> best{0, 0, -1};
  for (size_t c = 0; c < class_memory_.size(); ++c) {
    if (need.memory > class_memory_[c])
      continue;
    const double pref = order == Order::kWorstFitMemory ? -static_cast<double>(class_memory_[c])
                        : order == Order::kBestFit      ? static_cast<double>(class_memory_[c])
                                                        : 0.0;
    for (size_t k = n; k < idle_nodes_[c].size(); ++k) {
      if (idle_nodes_[c][k].empty())
        continue;
      const std::tuple<int, double, int> cand{static_cast<int>(k), pref, idle_nodes_[c][k].First()};
      if (std::get<2>(best) < 0 || cand < best)
        best = cand;
      break;
    }
  }
  const int node = std::get<2>(best);
  if (node < 0)
    return {};
  std::vector<int> chosen;
  for (GpuId id : state.gpus_of(NodeId(node))) {
    const int g = static_cast<int>(id.value());
    if (idle_[g] && static_cast<int>(chosen.size()) < n)
      chosen.push_back(g);
  }
  return chosen;
}

absl::StatusOr<std::vector<GpuId>> DiluScheduler::PlaceOnOneNode(const InstanceDemand& d,
                                                                 const Room& need, Order order,
                                                                 const ClusterState& state) {
  const int n = d.gpus;
  std::vector<int> nodes;
  std::vector<int> chosen;
  if (config_.workload_affinity) {  // tier 1: nodes of G_WA
    wa_.clear();
    hook_->Candidates(d, state, wa_);
    for (GpuId g : wa_) {
      if (state.gpu(g).active())
        nodes.push_back(node_of_[g.value()]);
    }
    chosen = BestNodeAmong(nodes, n, need, order, state);
  }
  if (chosen.empty()) {  // tier 2: nodes of the first fitting active GPUs in index order
    nodes.clear();
    const std::vector<FitIndex>& indices = order == Order::kFirstFit         ? first_fit_
                                           : order == Order::kWorstFitMemory ? worst_fit_
                                                                             : best_fit_;
    for (const FitIndex& index : indices) {  // best fit: one index per GPU memory size
      const size_t start = nodes.size();
      index.ForEachFit(need, [&](int g) {
        nodes.push_back(node_of_[g]);
        return nodes.size() - start < static_cast<size_t>(config_.node_candidates);
      });
    }
    chosen = BestNodeAmong(nodes, n, need, order, state);
  }
  if (chosen.empty())
    chosen = PickIdleNode(n, need, order, state);  // tier 3
  if (chosen.empty()) {
    return absl::ResourceExhaustedError(
        absl::StrCat("no node with ", n, " GPUs for instance ", d.instance.value()));
  }
  std::vector<GpuId> out;
  for (int g : chosen)
    out.push_back(GpuId(g));
  return out;
}

}  // namespace sluice::core
