// FitIndex: a set of GPUs ordered by a caller-supplied key, searchable for "the GPU with the
// smallest key that still has room for a demand" without scanning every GPU. DiluScheduler keeps
// one per ordering (best fit by fragmentation score, memory worst fit, first fit by id), fed from
// OnAdded/OnRemoved. Not thread-safe.
#ifndef SLUICE_CORE_DILU_FIT_INDEX_H_
#define SLUICE_CORE_DILU_FIT_INDEX_H_

#include <cstdint>
#include <functional>
#include <vector>

namespace sluice::core {

// Remaining room on a GPU (caps minus sums) or what a demand needs, per dimension.
struct Room {
  double request = 0;  // SM request share (Omega - sum of requests)
  double limit = 0;    // SM limit share (gamma - sum of limits)
  int64_t memory = 0;  // bytes
};

// Slack on the share dimensions so that sums like 0.7 + 0.2 + 0.1 still fit a cap of 1.0.
inline constexpr double kShareEpsilon = 1e-9;

// True when `need` fits into `room` (shares within kShareEpsilon, memory exactly).
inline bool Fits(const Room& room, const Room& need) {
  return need.request <= room.request + kShareEpsilon && need.limit <= room.limit + kShareEpsilon &&
         need.memory <= room.memory;
}

// How: keys are bucketed into `buckets` equal ranges of [key_lo, key_hi] (keys outside are
// clamped into the end buckets); a max-segment tree over the buckets holds, per dimension, the
// largest room of any member, so Find skips whole key ranges that cannot host the demand and
// scans only buckets whose maxima dominate it. When a member holding a maximum leaves or shrinks,
// the bucket's maxima stay as an upper bound and the bucket is marked stale; a search reaching a
// stale bucket recomputes them first. Cost: O(log B) per update; a search scans the first
// bucket(s) that pass the max filter, plus any stale bucket it reaches. Searches are logically
// const (they only tighten the cached maxima).
class FitIndex {
 public:
  // Index over GPU ids 0..gpu_count-1, all absent at first. Precondition: key_lo < key_hi,
  // buckets >= 1.
  FitIndex(int gpu_count, double key_lo, double key_hi, int buckets = 4096);

  // Inserts `gpu` or moves it to a new key / room.
  void Upsert(int gpu, double key, const Room& room);
  void Erase(int gpu);  // no-op when absent
  bool contains(int gpu) const { return slots_[gpu].bucket >= 0; }
  int size() const { return size_; }
  double key(int gpu) const { return slots_[gpu].key; }
  const Room& room(int gpu) const { return slots_[gpu].room; }

  // The member with the smallest (key, id) among those where Fits(room, need); -1 if none.
  int FindFirst(const Room& need) const;
  // Visits members that fit `need`, bucket by bucket in key order (arbitrary order inside a
  // bucket), until `visit` returns false.
  void ForEachFit(const Room& need, const std::function<bool(int gpu)>& visit) const;

 private:
  struct Slot {
    double key = 0;
    Room room;
    int bucket = -1;  // -1 when absent
    int pos = -1;     // index in buckets_[bucket]
  };
  int BucketOf(double key) const;
  void RefreshBucket(int b) const;  // recompute bucket b's maxima from its members
  void Propagate(int b) const;      // push leaf b's maxima up the tree
  // Leftmost bucket >= from whose maxima dominate `need`; -1 if none.
  int NextBucket(int from, const Room& need) const;
  int Descend(int node, int lo, int hi, int from, const Room& need) const;

  std::vector<Slot> slots_;
  std::vector<std::vector<int>> buckets_;
  // 1-based segment tree over buckets: per-dimension maxima (upper bounds for stale buckets).
  mutable std::vector<Room> tree_;
  mutable std::vector<char> stale_;  // per bucket
  int leaves_ = 1;          // power of two >= bucket count
  double key_lo_;
  double scale_;  // buckets per key unit
  int size_ = 0;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_DILU_FIT_INDEX_H_
