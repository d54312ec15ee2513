// BlitzScale's global parameter pool (§5.3), shared by every user of parameter placement: which
// GPU instances and host caches hold each model, the one-copy invariant (every registered model
// keeps at least one copy, on a GPU or in a host cache), host-cache capacity per node, and the
// host-cache policies of the baselines (ServerlessLLM's keep-alive, AllCache). Pure; time comes in
// as an argument. Thread-compatible.
//
// CONTRACT (lead, issue 10): used by src/sim/llm; the node's parameter store (runtime) mirrors
// its vocabulary. Extend, do not change.
#ifndef SLUICE_CORE_BLITZ_PARAMETER_POOL_H_
#define SLUICE_CORE_BLITZ_PARAMETER_POOL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/units.h"
#include "core/blitz/multicast_plan.h"

namespace sluice::core::blitz {

// How host caches are used. kOneCopy: BlitzScale (exactly one host copy per model, distributed
// evenly at start; a copy is kept while no GPU holds the model). kKeepAlive: ServerlessLLM (a host
// caches a model it loaded for keep_alive after last use, LRU-evicted past capacity; a miss reads
// SSD). kAllCache: every host caches every model. kNone: SSD only.
enum class HostCachePolicy { kOneCopy, kKeepAlive, kAllCache, kNone };

struct PoolConfig {
  HostCachePolicy policy = HostCachePolicy::kOneCopy;
  absl::Duration keep_alive = absl::Minutes(5);
  common::Bytes host_cache_per_node = common::Bytes::GiB(512);
  int nodes = 1;
  // Added. kOneCopy only: drop the host copy while some GPU instance holds the model and restore
  // it when the last GPU copy goes away (on that copy's node when it has room, else the
  // least-used host). Off (default): the one host copy stays, as in the paper's Fig. 16.
  bool reclaim_host_while_on_gpu = false;
};

// Added. InvalidArgument naming the field ("nodes", "keep_alive", "host_cache_per_node").
[[nodiscard]] absl::Status ValidatePoolConfig(const PoolConfig& config);

class ParameterPool {
 public:
  explicit ParameterPool(PoolConfig config);

  // Registers a model of `bytes` at `now`; kOneCopy puts its copy on the least-used host,
  // kAllCache on every host. FailedPrecondition when no host has room for the one copy.
  [[nodiscard]] absl::Status AddModel(const std::string& model, common::Bytes bytes,
                                      absl::Time now);
  // A GPU instance now holds (or stopped holding) a full copy of `model`.
  void AddGpuCopy(const std::string& model, int64_t instance, const Endpoint& where);
  void RemoveGpuCopy(const std::string& model, int64_t instance, absl::Time now);
  // A host finished loading `model` from SSD/network (kKeepAlive caches it), or used it now.
  void TouchHost(const std::string& model, int node, absl::Time now);
  // Expires keep-alive copies at `now` (kKeepAlive); no-op otherwise.
  void Expire(absl::Time now);

  // Current sources: GPU instances first, then hosts holding a copy.
  std::vector<Endpoint> Sources(const std::string& model) const;
  bool HostHas(const std::string& model, int node) const;
  common::Bytes HostCacheUsed(int node) const;
  common::Bytes TotalHostCacheUsed() const;
  int GpuCopies(const std::string& model) const;
  // Every registered model has >= 1 copy (GPU or host); used by property tests. Under kKeepAlive
  // and kNone the SSD of every node holds every model, so the invariant holds trivially.
  bool InvariantHolds() const;

  // Added (not in the original contract).
  const PoolConfig& config() const { return config_; }
  bool HasModel(const std::string& model) const { return models_.contains(model); }
  int HostCopies(const std::string& model) const;
  // Times a one-copy restore found no host with room and exceeded a node's capacity (the
  // invariant wins over capacity).
  int64_t overcommits() const { return overcommits_; }
  // A node failed: its cached copies are lost; under kOneCopy every model left without a copy
  // is re-homed on the least-used surviving host (§5.3 "Fault tolerance"). GPU copies on the node
  // must be removed by the caller (RemoveGpuCopy).
  void LoseHost(int node, absl::Time now);

 private:
  struct ModelState {
    common::Bytes bytes;
    absl::flat_hash_map<int64_t, Endpoint> gpu;      // instance -> where
    absl::flat_hash_map<int, absl::Time> host_use;   // node -> last use (cached copies)
  };

  // Least-used node with room for `bytes` (ties: lowest index), preferring `prefer` when it has
  // room; -1 when none has room. Nodes in `lost_` are skipped.
  int PickHost(common::Bytes bytes, int prefer) const;
  void PutHost(const std::string& model, ModelState& m, int node, absl::Time now);
  void DropHost(const std::string& model, ModelState& m, int node);
  void EnsureOneCopy(const std::string& model, ModelState& m, int prefer, absl::Time now);
  // kKeepAlive: evicts least-recently-used copies on `node` (never `keep`) until `bytes` fit.
  bool MakeRoom(int node, common::Bytes bytes, const std::string& keep);

  PoolConfig config_;
  absl::flat_hash_map<std::string, ModelState> models_;
  std::vector<common::Bytes> used_;                  // per node
  std::vector<std::vector<std::string>> cached_;     // per node: models with a host copy
  std::vector<bool> lost_;                           // per node
  int64_t overcommits_ = 0;
};

}  // namespace sluice::core::blitz

#endif  // SLUICE_CORE_BLITZ_PARAMETER_POOL_H_
