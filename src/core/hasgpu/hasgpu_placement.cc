// HAS-GPU placement: one pass over the active GPUs (alignment check on each), a sort of the ones
// that fit, then idle GPUs in id order.
#include "core/hasgpu/hasgpu_placement.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

#include "core/hasgpu/aligned_gpu.h"

namespace sluice::core {
namespace {

absl::Status CheckDemand(const InstanceDemand& d) {
  if (d.gpus < 1)
    return absl::InvalidArgumentError(absl::StrCat("demand gpus must be >= 1 (", d.gpus, ")"));
  if (d.memory_per_gpu.count() < 0)
    return absl::InvalidArgumentError("demand memory_per_gpu must be >= 0");
  return ValidateQuota(d.quota);
}

// Candidate GPUs in preference order.
std::vector<GpuId> Candidates(const InstanceDemand& d, const ClusterState& state, int max_types,
                              HeldOrder order) {
  const double sm = d.quota.limit;
  const double q = d.quota.time_quota;
  std::vector<std::pair<double, GpuId>> active;
  for (GpuId id : state.active_gpus()) {
    const GpuState& g = state.gpu(id);
    if (AlignedGpu(g, max_types).Fits(sm, q, d.memory_per_gpu)) {
      active.emplace_back(order == HeldOrder::kLeastHeld ? g.sum_held : -g.sum_held, id);
    }
  }
  std::sort(active.begin(), active.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first < b.first : a.second.value() < b.second.value();
  });
  std::vector<GpuId> out;
  out.reserve(active.size());
  for (const auto& [held, id] : active)
    out.push_back(id);
  const size_t enough = d.same_node ? static_cast<size_t>(state.gpu_count())
                                    : static_cast<size_t>(d.gpus);
  for (const GpuState& g : state.gpus()) {
    if (out.size() >= enough)
      break;
    if (!g.active() && d.memory_per_gpu <= g.memory_free())
      out.push_back(g.id);
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<GpuId>> HasGpuPlacement::Place(const InstanceDemand& demand,
                                                          const ClusterState& state) {
  if (absl::Status s = CheckDemand(demand); !s.ok())
    return s;
  const std::vector<GpuId> cand =
      Candidates(demand, state, options_.max_partition_types, options_.order);
  const size_t k = static_cast<size_t>(demand.gpus);
  if (!demand.same_node || k == 1) {
    if (cand.size() >= k)
      return std::vector<GpuId>(cand.begin(), cand.begin() + static_cast<std::ptrdiff_t>(k));
  } else {
    std::vector<std::vector<GpuId>> by_node(static_cast<size_t>(state.node_count()));
    for (GpuId id : cand) {
      std::vector<GpuId>& v = by_node[state.gpu(id).node.value()];
      v.push_back(id);
      if (v.size() == k)
        return v;
    }
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      options_.name, ": no GPU fits ", demand.gpus, " x (s ", demand.quota.limit, ", q ",
      demand.quota.time_quota, ", ", demand.memory_per_gpu.mib(), " MiB)"));
}

}  // namespace sluice::core
