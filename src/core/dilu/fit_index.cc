// FitIndex: bucketed keys plus a max-segment tree over the buckets. A max cannot be "un-maxed" on
// removal, and a bucket can hold thousands of GPUs (every idle GPU has the same fragmentation
// key), so a member holding a maximum that leaves or shrinks only marks its bucket stale: the
// tree keeps an upper bound (searches stay exact: they check every member they scan), and a
// search that reaches a stale bucket recomputes its maxima first.
#include "core/dilu/fit_index.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/status.h"

namespace sluice::core {
namespace {

constexpr Room kNoRoom{-std::numeric_limits<double>::infinity(),
                       -std::numeric_limits<double>::infinity(),
                       std::numeric_limits<int64_t>::min()};

Room Max(const Room& a, const Room& b) {
  return Room{std::max(a.request, b.request), std::max(a.limit, b.limit),
              std::max(a.memory, b.memory)};
}

// True when `r` attains `max` in some dimension, so removing it may lower the maximum.
bool Attains(const Room& r, const Room& max) {
  return r.request >= max.request || r.limit >= max.limit || r.memory >= max.memory;
}

}  // namespace

FitIndex::FitIndex(int gpu_count, double key_lo, double key_hi, int buckets)
    : slots_(gpu_count), buckets_(buckets), key_lo_(key_lo) {
  SLUICE_CHECK(key_lo < key_hi && buckets >= 1);
  scale_ = buckets / (key_hi - key_lo);
  while (leaves_ < buckets)
    leaves_ *= 2;
  tree_.assign(2 * leaves_, kNoRoom);
  stale_.assign(buckets, 0);
}

int FitIndex::BucketOf(double key) const {
  const double b = std::floor((key - key_lo_) * scale_);
  if (!(b >= 0))
    return 0;  // also catches NaN
  const int last = static_cast<int>(buckets_.size()) - 1;
  return b >= last ? last : static_cast<int>(b);
}

void FitIndex::Propagate(int b) const {
  for (int node = (leaves_ + b) / 2; node >= 1; node /= 2) {
    const Room m = Max(tree_[2 * node], tree_[2 * node + 1]);
    const Room& old = tree_[node];
    if (m.request == old.request && m.limit == old.limit && m.memory == old.memory)
      return;
    tree_[node] = m;
  }
}

void FitIndex::RefreshBucket(int b) const {
  Room m = kNoRoom;
  for (int g : buckets_[b])
    m = Max(m, slots_[g].room);
  tree_[leaves_ + b] = m;
  stale_[b] = 0;
  Propagate(b);
}

void FitIndex::Upsert(int gpu, double key, const Room& room) {
  Slot& s = slots_[gpu];
  const int b = BucketOf(key);
  if (s.bucket != b) {
    Erase(gpu);
    s.bucket = b;
    s.pos = static_cast<int>(buckets_[b].size());
    buckets_[b].push_back(gpu);
    ++size_;
  } else if (Attains(s.room, tree_[leaves_ + b])) {
    stale_[b] = 1;  // the old room may have been the bucket's maximum: an upper bound now
  }
  s.key = key;
  s.room = room;
  tree_[leaves_ + b] = Max(tree_[leaves_ + b], room);
  Propagate(b);
}

void FitIndex::Erase(int gpu) {
  Slot& s = slots_[gpu];
  if (s.bucket < 0)
    return;
  std::vector<int>& v = buckets_[s.bucket];
  const int moved = v.back();
  v[s.pos] = moved;
  slots_[moved].pos = s.pos;
  v.pop_back();
  const int b = s.bucket;
  s.bucket = -1;
  s.pos = -1;
  --size_;
  if (v.empty()) {
    RefreshBucket(b);  // exact, and O(1)
  } else if (Attains(s.room, tree_[leaves_ + b])) {
    stale_[b] = 1;
  }
}

int FitIndex::Descend(int node, int lo, int hi, int from, const Room& need) const {
  if (hi < from || !Fits(tree_[node], need))
    return -1;
  if (lo == hi)
    return lo < static_cast<int>(buckets_.size()) ? lo : -1;
  const int mid = (lo + hi) / 2;
  const int left = Descend(2 * node, lo, mid, from, need);
  if (left >= 0)
    return left;
  return Descend(2 * node + 1, mid + 1, hi, from, need);
}

int FitIndex::NextBucket(int from, const Room& need) const {
  while (from < static_cast<int>(buckets_.size())) {
    const int b = Descend(1, 0, leaves_ - 1, from, need);
    if (b < 0 || !stale_[b])
      return b;
    RefreshBucket(b);  // its maxima were an upper bound: exact again, then re-checked
    if (Fits(tree_[leaves_ + b], need))
      return b;
    from = b + 1;
  }
  return -1;
}

int FitIndex::FindFirst(const Room& need) const {
  for (int b = NextBucket(0, need); b >= 0; b = NextBucket(b + 1, need)) {
    int best = -1;
    for (int g : buckets_[b]) {
      const Slot& s = slots_[g];
      if (!Fits(s.room, need))
        continue;
      if (best < 0 || s.key < slots_[best].key || (s.key == slots_[best].key && g < best)) {
        best = g;
      }
    }
    if (best >= 0)
      return best;  // later buckets hold strictly larger keys
  }
  return -1;
}

void FitIndex::ForEachFit(const Room& need, const std::function<bool(int gpu)>& visit) const {
  for (int b = NextBucket(0, need); b >= 0; b = NextBucket(b + 1, need)) {
    for (int g : buckets_[b]) {
      if (Fits(slots_[g].room, need) && !visit(g))
        return;
    }
  }
}

}  // namespace sluice::core
