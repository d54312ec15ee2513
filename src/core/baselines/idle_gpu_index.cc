// IdleGpuIndex. Buckets are std::set so that iteration order (and hence placement) is by node
// index; the per-node idle lists are tiny (GPUs per node), so sorted vectors suffice.
#include "core/baselines/idle_gpu_index.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace sluice::core {

absl::StatusOr<NodeOrder> ParseNodeOrder(std::string_view text) {
  if (text == "most_allocated")
    return NodeOrder::kMostAllocated;
  if (text == "least_allocated")
    return NodeOrder::kLeastAllocated;
  return absl::InvalidArgumentError(absl::StrCat("node order must be most_allocated or ",
                                                 "least_allocated, got '",
                                                 absl::string_view(text.data(), text.size()), "'"));
}

void IdleGpuIndex::Rebuild(const ClusterState& state) {
  class_memory_.clear();
  for (const NodeSpec& n : state.spec().nodes)
    class_memory_.push_back(n.gpu.memory.count());
  std::sort(class_memory_.begin(), class_memory_.end());
  class_memory_.erase(std::unique(class_memory_.begin(), class_memory_.end()), class_memory_.end());
  max_gpus_per_node_ = 0;
  class_of_node_.assign(state.node_count(), 0);
  for (int n = 0; n < state.node_count(); ++n) {
    const NodeSpec& spec = state.spec().nodes[n];
    class_of_node_[n] = static_cast<int>(
        std::lower_bound(class_memory_.begin(), class_memory_.end(), spec.gpu.memory.count()) -
        class_memory_.begin());
    max_gpus_per_node_ = std::max(max_gpus_per_node_, spec.gpu_count);
  }
  buckets_.assign(class_memory_.size(), std::vector<std::set<int64_t>>(max_gpus_per_node_ + 1));
  idle_of_.assign(state.node_count(), {});
  idle_.assign(state.gpu_count(), false);
  for (const GpuState& g : state.gpus()) {
    if (g.active())
      continue;
    idle_[g.id.value()] = true;
    idle_of_[g.node.value()].push_back(g.id);
  }
  for (int n = 0; n < state.node_count(); ++n) {
    if (!idle_of_[n].empty())
      Bucket(n, static_cast<int>(idle_of_[n].size())).insert(n);
  }
}

void IdleGpuIndex::Refresh(GpuId id, const ClusterState& state) {
  const GpuState& g = state.gpu(id);
  const bool now_idle = !g.active();
  if (now_idle == idle_[id.value()])
    return;
  const int64_t node = g.node.value();
  std::vector<GpuId>& list = idle_of_[node];
  const int before = static_cast<int>(list.size());
  if (before > 0)
    Bucket(node, before).erase(node);
  auto pos = std::lower_bound(list.begin(), list.end(), id);
  if (now_idle) {
    list.insert(pos, id);
  } else {
    list.erase(pos);
  }
  idle_[id.value()] = now_idle;
  if (!list.empty())
    Bucket(node, static_cast<int>(list.size())).insert(node);
}

template <typename F>
void IdleGpuIndex::VisitNodes(int min_count, Bytes memory, NodeOrder order, F&& f) const {
  const int first_class = static_cast<int>(
      std::lower_bound(class_memory_.begin(), class_memory_.end(), memory.count()) -
      class_memory_.begin());
  const int lo = std::max(min_count, 1);
  const bool up = order == NodeOrder::kMostAllocated;
  for (int i = 0; i <= max_gpus_per_node_ - lo; ++i) {
    const int count = up ? lo + i : max_gpus_per_node_ - i;
    for (size_t c = first_class; c < class_memory_.size(); ++c) {
      for (int64_t node : buckets_[c][count]) {
        if (!f(node))
          return;
      }
    }
  }
}

std::optional<NodeId> IdleGpuIndex::PickNode(int k, Bytes memory, NodeOrder order) const {
  std::optional<NodeId> picked;
  VisitNodes(k, memory, order, [&](int64_t node) {
    picked = NodeId(node);
    return false;
  });
  return picked;
}

std::vector<GpuId> IdleGpuIndex::PickSpread(int k, Bytes memory, NodeOrder order) const {
  std::vector<GpuId> out;
  if (k <= 0)
    return out;
  VisitNodes(1, memory, order, [&](int64_t node) {
    for (GpuId g : idle_of_[node]) {
      out.push_back(g);
      if (static_cast<int>(out.size()) == k)
        return false;
    }
    return true;
  });
  return out;
}

absl::Status IdleGpuIndex::CheckConsistent(const ClusterState& state) const {
  if (static_cast<int>(idle_.size()) != state.gpu_count()) {
    return absl::InternalError("idle index not built for this cluster");
  }
  for (int n = 0; n < state.node_count(); ++n) {
    std::vector<GpuId> expect;
    for (GpuId id : state.gpus_of(NodeId(n))) {
      if (!state.gpu(id).active())
        expect.push_back(id);
      if (idle_[id.value()] == state.gpu(id).active()) {
        return absl::InternalError(absl::StrCat("GPU ", id.value(), " idle flag is stale"));
      }
    }
    if (expect != idle_of_[n]) {
      return absl::InternalError(absl::StrCat("node ", n, " idle list is stale"));
    }
    for (size_t c = 0; c < buckets_.size(); ++c) {
      for (size_t count = 0; count < buckets_[c].size(); ++count) {
        const bool want =
            static_cast<int>(c) == class_of_node_[n] && count > 0 && count == expect.size();
        if (buckets_[c][count].contains(n) != want) {
          return absl::InternalError(absl::StrCat("node ", n, " bucket is stale"));
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace sluice::core
