// HasGpuPlacement: HAS-GPU's pod placement (§3.1, Alg. 1 lines 15-19 and 24-25) as a
// PlacementPolicy: SM-partition alignment (aligned_gpu.h) and the GPU choice argmin_G H_G, H_G =
// sum of s_i x q_i on G (HGO), among the active GPUs with room; an idle GPU is opened only when no
// active GPU fits. Also serves fast-gshare with best fit (most held first) instead of argmin.
// Used by the has-gpu and fast-gshare policy sets (core/registry). O(active GPUs x pods per GPU)
// per Place. Not thread-safe.
#ifndef SLUICE_CORE_HASGPU_HASGPU_PLACEMENT_H_
#define SLUICE_CORE_HASGPU_HASGPU_PLACEMENT_H_

#include <string>
#include <string_view>
#include <vector>

#include "core/policy/placement.h"

namespace sluice::core {

enum class HeldOrder {
  kLeastHeld,  // HAS-GPU: argmin H_G, spreading load so pods keep vertical headroom
  kMostHeld,   // best fit (FaST-GShare packs to fill GPUs)
};

class HasGpuPlacement : public PlacementPolicy {
 public:
  struct Options {
    std::string name = "has-gpu";
    int max_partition_types = 2;  // distinct SM partitions per GPU (see hybrid_autoscaler.h)
    HeldOrder order = HeldOrder::kLeastHeld;
  };
  explicit HasGpuPlacement(Options options) : options_(std::move(options)) {}

  std::string_view name() const override { return options_.name; }
  // The demand's quota gives s (limit) and q (time_quota). Candidates: active GPUs where the pod
  // fits (alignment + memory), ordered by H_G (ascending for kLeastHeld, descending for
  // kMostHeld; ties by lower GPU id), then idle GPUs with the memory in id order. `gpus` > 1
  // takes the first `gpus` candidates, or with `same_node` the first node (in candidate order)
  // holding that many. InvalidArgument for a bad demand (gpus < 1, memory < 0, bad quota);
  // ResourceExhausted when nothing fits.
  absl::StatusOr<std::vector<GpuId>> Place(const InstanceDemand& demand,
                                           const ClusterState& state) override;

  const Options& options() const { return options_; }

 private:
  Options options_;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_HASGPU_HASGPU_PLACEMENT_H_
