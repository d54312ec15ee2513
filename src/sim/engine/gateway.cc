// Least-loaded dispatch over load buckets: O(1) amortized per load change (loads move by one
// per dispatch and by a batch per completion), deterministic tie-breaking.
#include "sim/engine/gateway.h"

#include <algorithm>

#include "common/status.h"

namespace sluice::sim {

void Gateway::AddWarm(int32_t instance, int64_t load) {
  SLUICE_CHECK(load >= 0 && instance >= 0);
  if (static_cast<size_t>(load) >= buckets_.size())
    buckets_.resize(load + 1);
  std::vector<int32_t>& pos = positions();
  if (static_cast<size_t>(instance) >= pos.size())
    pos.resize(instance + 1, -1);
  SLUICE_CHECK(pos[instance] < 0);
  std::vector<int32_t>& b = buckets_[load];
  pos[instance] = static_cast<int32_t>(b.size());
  b.push_back(instance);
  min_ = count_ == 0 ? load : std::min(min_, load);
  ++count_;
}

void Gateway::RemoveWarm(int32_t instance, int64_t load) {
  std::vector<int32_t>& pos = positions();
  SLUICE_CHECK(static_cast<size_t>(instance) < pos.size() && pos[instance] >= 0 &&
               static_cast<size_t>(load) < buckets_.size());
  std::vector<int32_t>& b = buckets_[load];
  const int32_t at = pos[instance];
  SLUICE_CHECK(at < static_cast<int32_t>(b.size()) && b[at] == instance);
  b[at] = b.back();
  pos[b[at]] = at;
  b.pop_back();
  pos[instance] = -1;
  if (--count_ == 0) {
    min_ = 0;
    return;
  }
  while (buckets_[min_].empty())
    ++min_;
}

void Gateway::UpdateLoad(int32_t instance, int64_t old_load, int64_t new_load) {
  if (old_load == new_load)
    return;
  // Remove first (the position map holds one entry per instance), then re-add; if the minimum
  // bucket empties, the scan stops at the next load that is occupied.
  RemoveWarm(instance, old_load);
  AddWarm(instance, new_load);
}

}  // namespace sluice::sim
