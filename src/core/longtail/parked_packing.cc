// ParkedPacking: memory best fit for parked instances over the active GPUs.
#include "core/longtail/parked_packing.h"

#include <utility>

#include "common/status.h"
#include "core/longtail/parking.h"

namespace sluice::core {

ParkedPacking::ParkedPacking(std::unique_ptr<PlacementPolicy> busy) : busy_(std::move(busy)) {
  SLUICE_CHECK(busy_ != nullptr);
}

absl::StatusOr<std::vector<GpuId>> ParkedPacking::Place(const InstanceDemand& demand,
                                                        const ClusterState& state) {
  if (!IsParked(demand.quota) || demand.gpus != 1)
    return busy_->Place(demand, state);
  GpuId best;
  Bytes best_free;
  for (GpuId g : state.active_gpus()) {
    const GpuState& s = state.gpu(g);
    const Bytes free = s.memory_free();
    if (free < demand.memory_per_gpu)
      continue;
    if (!best.valid() || free < best_free || (free == best_free && g < best)) {
      best = g;
      best_free = free;
    }
  }
  if (best.valid())
    return std::vector<GpuId>{best};
  return busy_->Place(demand, state);
}

void ParkedPacking::OnAdded(const Allocation& a, const ClusterState& state) {
  busy_->OnAdded(a, state);
}

void ParkedPacking::OnRemoved(const Allocation& a, const ClusterState& state) {
  busy_->OnRemoved(a, state);
}

void ParkedPacking::OnRequota(const Allocation& before, const Allocation& after,
                              const ClusterState& state) {
  busy_->OnRequota(before, after, state);
}

}  // namespace sluice::core
