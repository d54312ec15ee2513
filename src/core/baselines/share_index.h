// ShareIndex: active GPUs bucketed by free SM share (resolution 1/1000) and, inside a bucket,
// ordered by free memory, so StaticSharePlacement finds the fullest GPU that still fits without
// scanning the cluster. Kept in sync by the owner through Refresh(). Not thread-safe.
#ifndef SLUICE_CORE_BASELINES_SHARE_INDEX_H_
#define SLUICE_CORE_BASELINES_SHARE_INDEX_H_

#include <array>
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "absl/status/status.h"

#include "core/resource/cluster.h"

namespace sluice::core {

// Which per-GPU sum a static share is charged against. Static quotas have request == limit, so
// both give the same answer for MPS; kLimit is the conservative choice for anything else.
enum class ShareBasis { kRequest, kLimit };

// Slack for floating-point sums of shares (a GPU whose shares sum to 1 + 1e-9 is full, not over).
inline constexpr double kShareSlack = 1e-9;

class ShareIndex {
 public:
  static constexpr int kBuckets = 1000;  // bucket b holds free share in [b, b+1) / 1000

  explicit ShareIndex(ShareBasis basis = ShareBasis::kLimit) : basis_(basis) {}

  // Forgets everything and indexes every active GPU of `state`. O(GPUs log GPUs).
  void Rebuild(const ClusterState& state);
  // Re-reads GPU `id` from `state`: indexed iff active. Idempotent; O(log GPUs).
  void Refresh(GpuId id, const ClusterState& state);

  // Used share of `g` under this index's basis.
  double Used(const GpuState& g) const {
    return basis_ == ShareBasis::kLimit ? g.sum_limit : g.sum_request;
  }
  // True when `g` can take another `share` and `memory`.
  bool Fits(const GpuState& g, double share, Bytes memory) const {
    return Used(g) + share <= 1.0 + kShareSlack && g.memory_free() >= memory;
  }

  // Calls f(GpuId) for active GPUs that fit (`share`, `memory`) in best-fit order: least free
  // share first (to 1/1000), then least free memory, then lowest id; stops when f returns false.
  // Cost: O(buckets/64 + visited + entries of the first bucket below the memory bound).
  template <typename F>
  void VisitFitting(double share, Bytes memory, const ClusterState& state, F&& f) const;

  // Compares the index with a brute-force scan of `state` (tests and debugging).
  [[nodiscard]] absl::Status CheckConsistent(const ClusterState& state) const;

 private:
  using Key = std::pair<int64_t, int64_t>;  // (free memory bytes, gpu id)
  struct Where {
    int bucket = -1;  // -1: not indexed
    int64_t free_memory = 0;
  };
  // Monotone in free_share, so every GPU that fits a share s sits in a bucket at or above
  // BucketOf(s - kShareSlack).
  int BucketOf(double free_share) const;
  int NextNonEmpty(int from) const;  // first non-empty bucket >= from, or kBuckets + 1
  void Erase(int64_t gpu);

  ShareBasis basis_;
  std::vector<std::set<Key>> buckets_ = std::vector<std::set<Key>>(kBuckets + 1);
  std::array<uint64_t, (kBuckets + 64) / 64> nonempty_{};
  std::vector<Where> where_;  // per GPU
};

template <typename F>
void ShareIndex::VisitFitting(double share, Bytes memory, const ClusterState& state, F&& f) const {
  for (int b = NextNonEmpty(BucketOf(share - kShareSlack)); b <= kBuckets;
       b = NextNonEmpty(b + 1)) {
    const std::set<Key>& bucket = buckets_[b];
    for (auto it = bucket.lower_bound({memory.count(), -1}); it != bucket.end(); ++it) {
      const GpuId id(it->second);
      // Only the first bucket can hold GPUs with slightly less free share than asked.
      if (!Fits(state.gpu(id), share, memory))
        continue;
      if (!f(id))
        return;
    }
  }
}

}  // namespace sluice::core

#endif  // SLUICE_CORE_BASELINES_SHARE_INDEX_H_
