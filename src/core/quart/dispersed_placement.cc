// Greedy KL-dispersed, cache-aware placement (see dispersed_placement.h).
#include "core/quart/dispersed_placement.h"

#include <algorithm>
#include <cmath>

#include "absl/container/flat_hash_map.h"

namespace sluice::core {
namespace {

// A caching node with room that is best by `better`; -1 if none.
template <typename Better>
int BestCaching(const DispersedNodeIndex& index, std::span<const int> caching, int gpus,
                Better better) {
  int best = -1;
  for (int i : caching) {
    if (i >= 0 && i < index.size() && index.free(i) >= gpus && (best < 0 || better(i, best)))
      best = i;
  }
  return best;
}

}  // namespace

void DispersedNodeIndex::Set(int i, int free_gpus, int key_instances) {
  if (free_[i] > 0)
    by_key_.erase({keys_[i], -free_[i], i});
  by_free_.erase({free_[i], i});
  free_[i] = std::max(0, free_gpus);
  keys_[i] = std::max(0, key_instances);
  // Full nodes stay out of the dispersal order, so the scan for room stays short.
  if (free_[i] > 0)
    by_key_.insert({keys_[i], -free_[i], i});
  by_free_.insert({free_[i], i});
}

int DispersedNodeIndex::DispersedChoice(int gpus) const {
  for (const auto& [keys, neg_free, i] : by_key_) {
    if (-neg_free >= gpus)
      return i;
  }
  return -1;
}

int DispersedNodeIndex::BestFit(int gpus) const {
  auto it = by_free_.lower_bound({gpus, -1});
  return it == by_free_.end() ? -1 : it->second;
}

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

int DispersedPlacement::Choose(const DispersedNodeIndex& index, bool key, int gpus,
                               std::span<const int> caching) const {
  gpus = std::max(1, gpus);
  if (!key) {
    const int cached = BestCaching(index, caching, gpus,
                                   [&](int a, int b) { return index.free(a) < index.free(b); });
    return cached >= 0 ? cached : index.BestFit(gpus);
  }
  const int spread = index.DispersedChoice(gpus);
  const int cached = BestCaching(index, caching, gpus, [&](int a, int b) {
    return std::pair(index.keys(a), -index.free(a)) < std::pair(index.keys(b), -index.free(b));
  });
  // A caching node with room implies a dispersed choice exists (spread >= 0).
  const bool use_cache =
      cached >= 0 && (spread < 0 || index.keys(cached) <= index.keys(spread) + config_.cache_slack);
  return use_cache ? cached : spread;
}

PlacementOutcome DispersedPlacement::Place(const std::vector<CacheNode>& nodes,
                                           const std::vector<StageRequest>& requests) const {
  PlacementOutcome out;
  out.nodes.assign(requests.size(), common::NodeId());
  DispersedNodeIndex index(static_cast<int>(nodes.size()));
  absl::flat_hash_map<StageKey, std::vector<int>> caching;
  for (size_t j = 0; j < nodes.size(); ++j) {
    index.Set(static_cast<int>(j), nodes[j].free_gpus, nodes[j].key_instances);
    for (const StageKey& s : nodes[j].cached)
      caching[s].push_back(static_cast<int>(j));
  }
  out.kl_before = KlFromUniform(index.key_counts());
  auto place = [&](const StageRequest& q, size_t r) {
    auto it = caching.find(q.stage);
    const std::span<const int> cache =
        it == caching.end() ? std::span<const int>() : std::span<const int>(it->second);
    const int node = Choose(index, q.key, q.gpus, cache);
    if (node < 0)
      return;
    if (std::find(cache.begin(), cache.end(), node) != cache.end())
      ++out.cache_hits;
    index.Set(node, index.free(node) - std::max(1, q.gpus), index.keys(node) + (q.key ? 1 : 0));
    out.nodes[r] = nodes[node].id;
    ++out.placed;
  };
  // Key requests have precedence (§6.2), then the others.
  for (size_t r = 0; r < requests.size(); ++r) {
    if (requests[r].key)
      place(requests[r], r);
  }
  for (size_t r = 0; r < requests.size(); ++r) {
    if (!requests[r].key)
      place(requests[r], r);
  }
  out.kl_after = KlFromUniform(index.key_counts());
  return out;
}

}  // namespace sluice::core
