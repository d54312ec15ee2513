// ParkedPacking: the `sluice` set's placement. Instances placed parked (memory only,
// core/longtail/parking.h) are packed by memory: best fit (least free memory that still fits)
// among the GPUs already active, a new GPU only when none fits, so the resident-but-idle long
// tail fills as few GPUs as memory allows. Every other demand goes to the wrapped placement
// (Dilu's resourcing-complementary scheduler), which sees parked allocations' near-zero SM share
// and packs busy instances' SM onto those same GPUs. Every allocation is reported to the wrapped
// placement (its indices stay exact). Used by core/registry/sluice_policies. Not thread-safe.
#ifndef SLUICE_CORE_LONGTAIL_PARKED_PACKING_H_
#define SLUICE_CORE_LONGTAIL_PARKED_PACKING_H_

#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

#include "core/policy/placement.h"
#include "core/resource/cluster.h"

namespace sluice::core {

class ParkedPacking final : public PlacementPolicy {
 public:
  // `busy` places every demand that is not a parked single-GPU instance. Non-null.
  explicit ParkedPacking(std::unique_ptr<PlacementPolicy> busy);

  std::string_view name() const override { return "sluice"; }
  // A parked single-GPU demand (IsParked(demand.quota), gpus == 1): the active GPU with the
  // least free memory >= memory_per_gpu (lowest id among equals); with none, the wrapped
  // placement's answer. Other demands: the wrapped placement's answer.
  absl::StatusOr<std::vector<GpuId>> Place(const InstanceDemand& demand,
                                           const ClusterState& state) override;
  void OnAdded(const Allocation& a, const ClusterState& state) override;
  void OnRemoved(const Allocation& a, const ClusterState& state) override;
  void OnRequota(const Allocation& before, const Allocation& after,
                 const ClusterState& state) override;

 private:
  std::unique_ptr<PlacementPolicy> busy_;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_LONGTAIL_PARKED_PACKING_H_
