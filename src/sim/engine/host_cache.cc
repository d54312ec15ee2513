// LRU bookkeeping of HostCache: a list in recency order and an index into it.
#include "sim/engine/host_cache.h"

namespace sluice::sim {

bool HostCache::Touch(Key key) {
  auto it = index_.find(key);
  if (it == index_.end())
    return false;
  lru_.splice(lru_.begin(), lru_, it->second);
  return true;
}

std::vector<HostCache::Key> HostCache::Insert(Key key, common::Bytes bytes) {
  std::vector<Key> evicted;
  if (Touch(key))
    return evicted;
  lru_.push_front(Entry{key, bytes.count()});
  index_[key] = lru_.begin();
  used_ += bytes.count();
  while (used_ > limit_ && !lru_.empty()) {
    const Entry& e = lru_.back();
    used_ -= e.bytes;
    evicted.push_back(e.key);
    index_.erase(e.key);
    lru_.pop_back();
  }
  return evicted;
}

}  // namespace sluice::sim
