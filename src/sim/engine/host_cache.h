// HostCache: the host-memory parameter cache of one node in the simulator (QUART's KeysManager,
// §6.1, shared with fast cold starts): which models' parameters a node keeps in host memory, in
// least-recently-used order, bounded by the node's host memory. After an insert takes the cache
// past `threshold` (85 %, the runtime parameter store's rule) of the capacity, least recently used
// entries are evicted until it is back at or under it (the new entry last; an entry larger than
// the threshold on its own is not kept). Keys are the caller's (the engine uses the perf-model
// entry). Used by the engine (engine.h); not thread-safe.
#ifndef SLUICE_SIM_ENGINE_HOST_CACHE_H_
#define SLUICE_SIM_ENGINE_HOST_CACHE_H_

#include <cstdint>
#include <list>
#include <vector>

#include "absl/container/flat_hash_map.h"

#include "common/units.h"

namespace sluice::sim {

class HostCache {
 public:
  using Key = const void*;
  static constexpr double kEvictThreshold = 0.85;

  explicit HostCache(common::Bytes capacity = common::Bytes::GiB(256),
                     double threshold = kEvictThreshold)
      : limit_(static_cast<int64_t>(static_cast<double>(capacity.count()) * threshold)) {}

  bool Contains(Key key) const { return index_.contains(key); }
  // Marks `key` most recently used; false when it is not cached.
  bool Touch(Key key);
  // Caches `bytes` (>= 0) for `key` as the most recently used entry (a present key is touched and
  // keeps its size), then evicts past the threshold. Returns the evicted keys, oldest first.
  std::vector<Key> Insert(Key key, common::Bytes bytes);

  int64_t used_bytes() const { return used_; }
  int64_t limit_bytes() const { return limit_; }
  size_t size() const { return index_.size(); }

 private:
  struct Entry {
    Key key;
    int64_t bytes;
  };
  int64_t limit_;
  int64_t used_ = 0;
  std::list<Entry> lru_;  // front = most recently used
  absl::flat_hash_map<Key, std::list<Entry>::iterator> index_;
};

}  // namespace sluice::sim

#endif  // SLUICE_SIM_ENGINE_HOST_CACHE_H_
