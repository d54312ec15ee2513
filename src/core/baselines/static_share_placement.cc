// StaticSharePlacement.
#include "core/baselines/static_share_placement.h"

#include <algorithm>
#include <tuple>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

#include "common/status.h"
#include "core/baselines/exclusive_placement.h"

namespace sluice::core {

StaticSharePlacement::StaticSharePlacement(Options options)
    : options_(std::move(options)), shares_(options_.basis) {}

double StaticSharePlacement::ShareOf(const SmQuota& quota) const {
  return options_.basis == ShareBasis::kLimit ? quota.limit : quota.request;
}

void StaticSharePlacement::Bind(const ClusterState& state) {
  if (bound_ == &state)
    return;
  bound_ = &state;
  shares_.Rebuild(state);
  idle_.Rebuild(state);
}

absl::StatusOr<std::vector<GpuId>> StaticSharePlacement::Place(const InstanceDemand& demand,
                                                               const ClusterState& state) {
  SLUICE_RETURN_IF_ERROR(ValidateDemand(demand));
  const double share = ShareOf(demand.quota);
  if (!(share > 0 && share <= 1)) {
    return absl::InvalidArgumentError(absl::StrCat(options_.name, ": instance ",
                                                   demand.instance.value(), " has share ", share,
                                                   ", need 0 < share <= 1"));
  }
  Bind(state);
  std::vector<GpuId> picked;
  if (demand.gpus == 1) {
    if (std::optional<GpuId> g = PlaceOne(share, demand.memory_per_gpu, state))
      picked = {*g};
  } else if (demand.same_node) {
    picked = PlaceSameNode(demand, share, state);
  } else {
    picked = PlaceSpread(demand, share, state);
  }
  if (static_cast<int>(picked.size()) == demand.gpus)
    return picked;
  return absl::ResourceExhaustedError(
      absl::StrCat(options_.name, ": no room for ", demand.gpus, " x (share ", share, ", ",
                   demand.memory_per_gpu.mib(), " MiB)",
                   demand.same_node && demand.gpus > 1 ? " on one node" : "", " for instance ",
                   demand.instance.value()));
}

std::optional<GpuId> StaticSharePlacement::PlaceOne(double share, Bytes memory,
                                                    const ClusterState& state) const {
  std::optional<GpuId> best;
  shares_.VisitFitting(share, memory, state, [&](GpuId id) {
    best = id;
    return false;
  });
  if (best)
    return best;
  if (std::optional<NodeId> node = idle_.PickNode(1, memory, options_.node_order)) {
    return idle_.idle_of(*node).front();
  }
  return std::nullopt;
}

std::vector<GpuId> StaticSharePlacement::FittingOnNode(NodeId node, double share, Bytes memory,
                                                       int want, const ClusterState& state) const {
  std::vector<std::tuple<double, int64_t, GpuId>> active;  // (free share, free memory, id)
  std::vector<GpuId> empty;
  for (GpuId id : state.gpus_of(node)) {
    const GpuState& g = state.gpu(id);
    if (!shares_.Fits(g, share, memory))
      continue;
    if (g.active()) {
      active.emplace_back(1.0 - shares_.Used(g), g.memory_free().count(), id);
    } else {
      empty.push_back(id);
    }
  }
  std::sort(active.begin(), active.end());
  std::vector<GpuId> out;
  for (const auto& a : active)
    out.push_back(std::get<2>(a));
  out.insert(out.end(), empty.begin(), empty.end());
  if (static_cast<int>(out.size()) > want)
    out.resize(want);
  return out;
}

std::vector<GpuId> StaticSharePlacement::PlaceSameNode(const InstanceDemand& demand, double share,
                                                       const ClusterState& state) const {
  const Bytes mem = demand.memory_per_gpu;
  absl::flat_hash_set<int64_t> seen;
  std::vector<GpuId> picked;
  shares_.VisitFitting(share, mem, state, [&](GpuId id) {
    const NodeId node = state.gpu(id).node;
    if (!seen.insert(node.value()).second)
      return true;
    picked = FittingOnNode(node, share, mem, demand.gpus, state);
    return static_cast<int>(picked.size()) < demand.gpus;
  });
  if (static_cast<int>(picked.size()) == demand.gpus)
    return picked;
  if (std::optional<NodeId> node = idle_.PickNode(demand.gpus, mem, options_.node_order)) {
    const std::vector<GpuId>& idle = idle_.idle_of(*node);
    return std::vector<GpuId>(idle.begin(), idle.begin() + demand.gpus);
  }
  return {};
}

std::vector<GpuId> StaticSharePlacement::PlaceSpread(const InstanceDemand& demand, double share,
                                                     const ClusterState& state) const {
  std::vector<GpuId> picked;
  shares_.VisitFitting(share, demand.memory_per_gpu, state, [&](GpuId id) {
    picked.push_back(id);
    return static_cast<int>(picked.size()) < demand.gpus;
  });
  const int missing = demand.gpus - static_cast<int>(picked.size());
  if (missing > 0) {
    std::vector<GpuId> idle = idle_.PickSpread(missing, demand.memory_per_gpu, options_.node_order);
    picked.insert(picked.end(), idle.begin(), idle.end());
  }
  return picked;
}

void StaticSharePlacement::OnAdded(const Allocation& a, const ClusterState& state) {
  if (bound_ != &state) {
    Bind(state);  // a rebuild reads the committed state, so this allocation is included
    return;
  }
  shares_.Refresh(a.gpu, state);
  idle_.Refresh(a.gpu, state);
}

void StaticSharePlacement::OnRemoved(const Allocation& a, const ClusterState& state) {
  OnAdded(a, state);  // both indices re-read the GPU
}

absl::Status StaticSharePlacement::CheckIndex(const ClusterState& state) const {
  if (bound_ != &state)
    return absl::FailedPreconditionError("index bound to another cluster");
  SLUICE_RETURN_IF_ERROR(shares_.CheckConsistent(state));
  return idle_.CheckConsistent(state);
}

}  // namespace sluice::core
