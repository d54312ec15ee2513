// Greedy KL-dispersed, cache-aware placement (see dispersed_placement.h).
#include "core/quart/dispersed_placement.h"

#include <cmath>
#include <set>
#include <tuple>

#include "absl/container/flat_hash_map.h"

namespace sluice::core {
namespace {

// Ordered views of the nodes, kept in step as GPUs are taken.
class NodeIndex {
 public:
  explicit NodeIndex(const std::vector<CacheNode>& nodes)
      : free_(nodes.size()), keys_(nodes.size()) {
    for (size_t j = 0; j < nodes.size(); ++j) {
      const int i = static_cast<int>(j);
      free_[j] = nodes[j].free_gpus;
      keys_[j] = std::max(0, nodes[j].key_instances);
      if (free_[j] > 0)
        by_key_.insert({keys_[j], -free_[j], i});
      by_free_.insert({free_[j], i});
      for (const StageKey& s : nodes[j].cached)
        caching_[s].push_back(i);
    }
  }

  // Most dispersed node with room: fewest key instances, then most free GPUs. -1 if none.
  // Nodes with no free GPU are not in by_key_; one-GPU requests take the first entry.
  int DispersedChoice(int gpus) const {
    for (const auto& [keys, neg_free, i] : by_key_) {
      if (-neg_free >= gpus)
        return i;
    }
    return -1;
  }
  // Best-fit node with room: fewest free GPUs that still fit. -1 if none.
  int BestFit(int gpus) const {
    auto it = by_free_.lower_bound({gpus, -1});
    return it == by_free_.end() ? -1 : std::get<1>(*it);
  }
  // Among nodes caching `stage` with room, the best by `better`. -1 if none.
  template <typename Better>
  int CachingChoice(const StageKey& stage, int gpus, Better better) const {
    auto it = caching_.find(stage);
    if (it == caching_.end())
      return -1;
    int best = -1;
    for (int i : it->second) {
      if (free_[i] >= gpus && (best < 0 || better(i, best)))
        best = i;
    }
    return best;
  }
  void Take(int i, int gpus, bool key) {
    by_key_.erase({keys_[i], -free_[i], i});
    by_free_.erase({free_[i], i});
    free_[i] -= gpus;
    if (key)
      ++keys_[i];
    // Full nodes leave the dispersal order, so the scan for room stays short.
    if (free_[i] > 0)
      by_key_.insert({keys_[i], -free_[i], i});
    by_free_.insert({free_[i], i});
  }
  int free(int i) const { return free_[i]; }
  int keys(int i) const { return keys_[i]; }
  const std::vector<int>& key_counts() const { return keys_; }
  bool Caches(int i, const StageKey& stage) const {
    auto it = caching_.find(stage);
    if (it == caching_.end())
      return false;
    for (int j : it->second) {
      if (j == i)
        return true;
    }
    return false;
  }

 private:
  std::vector<int> free_;
  std::vector<int> keys_;
  std::set<std::tuple<int, int, int>> by_key_;
  std::set<std::pair<int, int>> by_free_;
  absl::flat_hash_map<StageKey, std::vector<int>> caching_;
};

}  // namespace

double KlFromUniform(const std::vector<int>& counts) {
  double total = 0;
  for (int c : counts)
    total += std::max(0, c);
  if (total <= 0 || counts.empty())
    return 0.0;
  const double m = static_cast<double>(counts.size());
  double kl = 0;
  for (int c : counts) {
    if (c <= 0)
      continue;
    const double p = c / total;
    kl += p * std::log(p * m);
  }
  return std::max(0.0, kl);
}

absl::StatusOr<DispersedPlacement> DispersedPlacement::Create(
    const DispersedPlacementConfig& config) {
  if (config.cache_slack < 0) {
    return absl::InvalidArgumentError("field 'cache_slack': must be >= 0");
  }
  return DispersedPlacement(config);
}

PlacementOutcome DispersedPlacement::Place(const std::vector<CacheNode>& nodes,
                                           const std::vector<StageRequest>& requests) const {
  PlacementOutcome out;
  out.nodes.assign(requests.size(), common::NodeId());
  NodeIndex index(nodes);
  out.kl_before = KlFromUniform(index.key_counts());
  auto place = [&](size_t r, int node) {
    if (node < 0)
      return;
    const StageRequest& q = requests[r];
    if (index.Caches(node, q.stage))
      ++out.cache_hits;
    index.Take(node, std::max(1, q.gpus), q.key);
    out.nodes[r] = nodes[node].id;
    ++out.placed;
  };
  for (size_t r = 0; r < requests.size(); ++r) {
    if (!requests[r].key)
      continue;
    const int gpus = std::max(1, requests[r].gpus);
    const int spread = index.DispersedChoice(gpus);
    const int cached = index.CachingChoice(requests[r].stage, gpus, [&](int a, int b) {
      return std::pair(index.keys(a), -index.free(a)) < std::pair(index.keys(b), -index.free(b));
    });
    // A caching node with room implies a dispersed choice exists (spread >= 0).
    const bool use_cache =
        cached >= 0 &&
        (spread < 0 || index.keys(cached) <= index.keys(spread) + config_.cache_slack);
    place(r, use_cache ? cached : spread);
  }
  for (size_t r = 0; r < requests.size(); ++r) {
    if (requests[r].key)
      continue;
    const int gpus = std::max(1, requests[r].gpus);
    const int cached = index.CachingChoice(
        requests[r].stage, gpus, [&](int a, int b) { return index.free(a) < index.free(b); });
    place(r, cached >= 0 ? cached : index.BestFit(gpus));
  }
  out.kl_after = KlFromUniform(index.key_counts());
  return out;
}

}  // namespace sluice::core
