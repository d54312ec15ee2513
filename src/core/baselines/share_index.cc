// ShareIndex. A 1001-bit occupancy mask lets VisitFitting skip empty buckets a word at a time.
#include "core/baselines/share_index.h"

#include <algorithm>
#include <bit>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace sluice::core {

// The 1e-6 (a millionth of a bucket) keeps shares like 1 - 0.7 = 0.30000000000000004 and
// 0.29999999999999999 in the same bucket.
int ShareIndex::BucketOf(double free_share) const {
  const double clamped = std::clamp(free_share, 0.0, 1.0);
  return std::clamp(static_cast<int>(std::floor(clamped * kBuckets + 1e-6)), 0, kBuckets);
}

int ShareIndex::NextNonEmpty(int from) const {
  if (from > kBuckets)
    return kBuckets + 1;
  int word = from / 64;
  uint64_t bits = nonempty_[word] & (~uint64_t{0} << (from % 64));
  while (bits == 0) {
    if (++word >= static_cast<int>(nonempty_.size()))
      return kBuckets + 1;
    bits = nonempty_[word];
  }
  return std::min(word * 64 + std::countr_zero(bits), kBuckets + 1);
}

void ShareIndex::Erase(int64_t gpu) {
  Where& w = where_[gpu];
  if (w.bucket < 0)
    return;
  std::set<Key>& bucket = buckets_[w.bucket];
  bucket.erase({w.free_memory, gpu});
  if (bucket.empty())
    nonempty_[w.bucket / 64] &= ~(uint64_t{1} << (w.bucket % 64));
  w.bucket = -1;
}

void ShareIndex::Rebuild(const ClusterState& state) {
  for (std::set<Key>& b : buckets_)
    b.clear();
  nonempty_.fill(0);
  where_.assign(state.gpu_count(), Where{});
  for (GpuId id : state.active_gpus())
    Refresh(id, state);
}

void ShareIndex::Refresh(GpuId id, const ClusterState& state) {
  const int64_t gpu = id.value();
  Erase(gpu);
  const GpuState& g = state.gpu(id);
  if (!g.active())
    return;
  Where& w = where_[gpu];
  w.bucket = BucketOf(1.0 - Used(g));
  w.free_memory = g.memory_free().count();
  buckets_[w.bucket].insert({w.free_memory, gpu});
  nonempty_[w.bucket / 64] |= uint64_t{1} << (w.bucket % 64);
}

absl::Status ShareIndex::CheckConsistent(const ClusterState& state) const {
  if (static_cast<int>(where_.size()) != state.gpu_count()) {
    return absl::InternalError("share index not built for this cluster");
  }
  size_t indexed = 0;
  for (const GpuState& g : state.gpus()) {
    const Where& w = where_[g.id.value()];
    if (!g.active()) {
      if (w.bucket >= 0)
        return absl::InternalError(absl::StrCat("idle GPU ", g.id.value(), " still indexed"));
      continue;
    }
    ++indexed;
    if (w.bucket != BucketOf(1.0 - Used(g)) || w.free_memory != g.memory_free().count() ||
        !buckets_[w.bucket].contains({w.free_memory, g.id.value()})) {
      return absl::InternalError(absl::StrCat("GPU ", g.id.value(), " entry is stale"));
    }
  }
  size_t total = 0;
  for (int b = 0; b <= kBuckets; ++b) {
    total += buckets_[b].size();
    const bool bit = (nonempty_[b / 64] >> (b % 64)) & 1;
    if (bit == buckets_[b].empty()) {
      return absl::InternalError(absl::StrCat("bucket ", b, " occupancy bit is stale"));
    }
  }
  if (total != indexed)
    return absl::InternalError("index holds entries for unknown GPUs");
  return absl::OkStatus();
}

}  // namespace sluice::core
