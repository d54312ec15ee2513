// ClusterState bookkeeping: per-GPU sums are updated incrementally so that placement policies
// can score a GPU in O(1); the active list supports O(1) insert/erase via stored positions.
#include "core/resource/cluster.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

#include "common/status.h"

namespace sluice::core {

ClusterSpec ClusterSpec::Uniform(int count, const NodeSpec& node, const std::string& prefix) {
  ClusterSpec spec;
  spec.nodes.reserve(count);
  for (int i = 0; i < count; ++i) {
    NodeSpec n = node;
    n.name = absl::StrCat(prefix, "-", i);
    spec.nodes.push_back(std::move(n));
  }
  return spec;
}

QuotaKind ClassifyQuota(const SmQuota& q) {
  if (q.request >= 1.0 && q.limit >= 1.0) {
    return QuotaKind::kExclusive;
  }
  if (q.request == q.limit) {
    return QuotaKind::kStatic;
  }
  return QuotaKind::kElastic;
}

absl::Status ValidateQuota(const SmQuota& q) {
  if (!(q.request > 0) || !(q.request <= q.limit) || !(q.limit <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("SM quota must satisfy 0 < request <= limit <= 1", " (request=", q.request,
                     ", limit=", q.limit, ")"));
  }
  if (!(q.time_quota > 0) || !(q.time_quota <= 1.0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("time_quota must be in (0, 1] (time_quota=", q.time_quota, ")"));
  }
  return absl::OkStatus();
}

ClusterState::ClusterState(const ClusterSpec& spec) : spec_(spec) {
  node_gpus_.resize(spec_.nodes.size());
  for (size_t n = 0; n < spec_.nodes.size(); ++n) {
    for (int g = 0; g < spec_.nodes[n].gpu_count; ++g) {
      GpuState s;
      s.id = GpuId(static_cast<int64_t>(gpus_.size()));
      s.node = NodeId(static_cast<int64_t>(n));
      s.spec = spec_.nodes[n].gpu;
      node_gpus_[n].push_back(s.id);
      gpus_.push_back(std::move(s));
    }
  }
  active_pos_.assign(gpus_.size(), -1);
}

std::span<const GpuId> ClusterState::gpus_of(NodeId node) const {
  return node_gpus_[node.value()];
}

absl::Status ClusterState::Add(const Allocation& a) {
  if (!a.gpu.valid() || a.gpu.value() >= gpu_count()) {
    return absl::InvalidArgumentError(absl::StrCat("unknown GPU ", a.gpu.value()));
  }
  SLUICE_RETURN_IF_ERROR(ValidateQuota(a.quota));
  GpuState& g = gpus_[a.gpu.value()];
  if (a.memory.count() < 0 || g.memory_used + a.memory > g.spec.memory) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "GPU ", a.gpu.value(), " has ", g.memory_free().mib(), " MiB free, need ", a.memory.mib()));
  }
  auto& held = holdings_[a.instance];
  if (std::find(held.begin(), held.end(), a.gpu) != held.end()) {
    return absl::AlreadyExistsError(
        absl::StrCat("instance ", a.instance.value(), " already on GPU ", a.gpu.value()));
  }
  held.push_back(a.gpu);
  g.sum_request += a.quota.request;
  g.sum_limit += a.quota.limit;
  g.sum_held += a.quota.held();
  g.memory_used += a.memory;
  g.allocations.push_back(a);
  ++g.version;
  MarkActive(a.gpu);
  return absl::OkStatus();
}

std::vector<Allocation> ClusterState::Remove(InstanceId instance) {
  std::vector<Allocation> released;
  auto it = holdings_.find(instance);
  if (it == holdings_.end()) {
    return released;
  }
  for (GpuId id : it->second) {
    GpuState& g = gpus_[id.value()];
    auto& v = g.allocations;
    auto a = std::find_if(v.begin(), v.end(),
                          [&](const Allocation& x) { return x.instance == instance; });
    SLUICE_CHECK(a != v.end());
    g.sum_request -= a->quota.request;
    g.sum_limit -= a->quota.limit;
    g.sum_held -= a->quota.held();
    g.memory_used -= a->memory;
    released.push_back(*a);
    v.erase(a);
    ++g.version;
    if (v.empty()) {
      g.sum_request = 0;  // wipe accumulated rounding error
      g.sum_limit = 0;
      g.sum_held = 0;
      MarkIdle(id);
    }
  }
  holdings_.erase(it);
  return released;
}

absl::Status ClusterState::UpdateQuota(InstanceId instance, const SmQuota& quota) {
  SLUICE_RETURN_IF_ERROR(ValidateQuota(quota));
  auto it = holdings_.find(instance);
  if (it == holdings_.end()) {
    return absl::NotFoundError(absl::StrCat("instance ", instance.value(), " holds no GPU"));
  }
  for (GpuId id : it->second) {
    GpuState& g = gpus_[id.value()];
    auto a = std::find_if(g.allocations.begin(), g.allocations.end(),
                          [&](const Allocation& x) { return x.instance == instance; });
    SLUICE_CHECK(a != g.allocations.end());
    g.sum_request += quota.request - a->quota.request;
    g.sum_limit += quota.limit - a->quota.limit;
    g.sum_held += quota.held() - a->quota.held();
    a->quota = quota;
    ++g.version;
  }
  return absl::OkStatus();
}

std::vector<GpuId> ClusterState::GpusOf(InstanceId instance) const {
  auto it = holdings_.find(instance);
  return it == holdings_.end() ? std::vector<GpuId>{} : it->second;
}

void ClusterState::MarkActive(GpuId id) {
  if (active_pos_[id.value()] >= 0) {
    return;
  }
  active_pos_[id.value()] = static_cast<int>(active_.size());
  active_.push_back(id);
}

void ClusterState::MarkIdle(GpuId id) {
  const int pos = active_pos_[id.value()];
  if (pos < 0) {
    return;
  }
  const GpuId last = active_.back();
  active_[pos] = last;
  active_pos_[last.value()] = pos;
  active_.pop_back();
  active_pos_[id.value()] = -1;
}

}  // namespace sluice::core
