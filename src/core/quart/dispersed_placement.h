// QUART's cache-aware scheduler (§6): places pipeline-stage instances on nodes so that key-stage
// instances spread out (minimising the KL divergence of their distribution over nodes from the
// uniform, Eq. 8-10) while preferring nodes whose host cache holds the stage's parameters, and
// packs the other stages densely. Used by the simulator and the controller for pipelines under
// the QUART policy set. Pure; not thread-safe (holds scratch state only during a call).
#ifndef SLUICE_CORE_QUART_DISPERSED_PLACEMENT_H_
#define SLUICE_CORE_QUART_DISPERSED_PLACEMENT_H_

#include <set>
#include <span>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"

#include "common/ids.h"

namespace sluice::core {

// Which stage's parameters: stage `stage` (0-based) of function `function`.
struct StageKey {
  common::FunctionId function;
  int stage = 0;
  friend bool operator==(const StageKey&, const StageKey&) = default;
  template <typename H>
  friend H AbslHashValue(H h, const StageKey& k) {
    return H::combine(std::move(h), k.function, k.stage);
  }
};

// A node as the scheduler sees it.
struct CacheNode {
  common::NodeId id;
  int free_gpus = 0;             // GPUs with no stage instance
  int key_instances = 0;         // key-stage instances already running there
  std::vector<StageKey> cached;  // stages whose parameters the node's host cache holds
};

// One instance to place.
struct StageRequest {
  StageKey stage;
  bool key = false;  // a key stage (QuartScaler's detection) is dispersed, others packed
  int gpus = 1;      // GPUs the instance takes (>= 1)
};

// cache_slack 1: a node holding the stage in its host cache is chosen for a key stage when it
// has at most one more key instance than the most dispersed choice. A cache hit starts a QUART
// stage in ~1 s instead of tens of seconds from disk (§2.2: 45 s for BERT-21B), which outweighs
// one extra co-located key instance; 0 makes the cache a tie-breaker only (exact KL greedy).
struct DispersedPlacementConfig {
  int cache_slack = 1;  // >= 0, key instances
};

struct PlacementOutcome {
  std::vector<common::NodeId> nodes;  // per request, in request order; invalid id: no room
  int placed = 0;
  int cache_hits = 0;    // placed on a node whose cache holds the stage
  double kl_before = 0;  // D_KL(key distribution || uniform over nodes), nats
  double kl_after = 0;
};

// D_KL(P || U) where P_j = counts[j] / sum and U is uniform over counts.size() positions;
// 0 when there are no key instances or no positions. In [0, log M].
double KlFromUniform(const std::vector<int>& counts);

// Live per-node view (free GPUs, key instances) ordered for the two greedy choices. Place()
// builds one per call; QuartPlacement (quart_placement.h) keeps one across calls and updates
// only the node a commit touched, so one instance costs O(log M) instead of O(M log M).
class DispersedNodeIndex {
 public:
  explicit DispersedNodeIndex(int nodes) : free_(nodes, 0), keys_(nodes, 0) {
    for (int i = 0; i < nodes; ++i)
      by_free_.insert({0, i});
  }
  int size() const { return static_cast<int>(free_.size()); }
  // Sets node i's free GPUs and key instances (negative values count as 0). O(log M).
  void Set(int i, int free_gpus, int key_instances);
  // Most dispersed node with room: fewest key instances, then most free GPUs. -1 if none.
  int DispersedChoice(int gpus) const;
  // Best-fit node with room: fewest free GPUs that still fit. -1 if none.
  int BestFit(int gpus) const;
  int free(int i) const { return free_[i]; }
  int keys(int i) const { return keys_[i]; }
  const std::vector<int>& key_counts() const { return keys_; }

 private:
  std::vector<int> free_;
  std::vector<int> keys_;
  std::set<std::tuple<int, int, int>> by_key_;  // (keys, -free, node), nodes with room only
  std::set<std::pair<int, int>> by_free_;       // (free, node)
};

class DispersedPlacement {
 public:
  // InvalidArgument naming the field when cache_slack < 0.
  static absl::StatusOr<DispersedPlacement> Create(const DispersedPlacementConfig& config);

  // Places key requests first (they have precedence, §6.2), then the others, each greedily:
  //   key: among nodes with room, the fewest key instances (adding one there is the step that
  //     lowers D_KL the most: D_KL = (1/N) sum n_j log n_j + log M - log N, and n log n is
  //     convex), ties to the most free GPUs (room to scale the key stage later); a caching node
  //     wins when its key count is within cache_slack of that choice.
  //   other: a caching node with room if any, else best fit (fewest free GPUs that fit).
  // With cache_slack 0 and one-GPU key requests the final key counts minimise D_KL over every
  // placement that fits (greedy water-filling on a separable convex objective); the property
  // test checks it is never worse than random placement. Requests with gpus < 1 count as 1.
  // Cost: O((R + M) log M + sum over key requests of the caching nodes scanned).
  PlacementOutcome Place(const std::vector<CacheNode>& nodes,
                         const std::vector<StageRequest>& requests) const;

  // The rule above for one instance over a live index: `caching` lists the indices of the nodes
  // whose host cache holds the instance's parameters. Returns a node index with at least `gpus`
  // free GPUs, or -1 when none has room. Does not change `index`.
  int Choose(const DispersedNodeIndex& index, bool key, int gpus,
             std::span<const int> caching) const;

 private:
  explicit DispersedPlacement(const DispersedPlacementConfig& c) : config_(c) {}

  DispersedPlacementConfig config_;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_QUART_DISPERSED_PLACEMENT_H_
