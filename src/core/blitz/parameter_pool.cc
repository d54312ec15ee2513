// Global parameter pool: per-model GPU and host copies, per-node host-cache accounting and the
// host-cache policies (docs/network-model.md, "Parameter pool").
#include "core/blitz/parameter_pool.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace sluice::core::blitz {

absl::Status ValidatePoolConfig(const PoolConfig& config) {
  if (config.nodes < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameter pool field 'nodes': must be >= 1 (got ", config.nodes, ")"));
  }
  if (config.keep_alive < absl::ZeroDuration() || config.keep_alive == absl::InfiniteDuration()) {
    return absl::InvalidArgumentError(
        "parameter pool field 'keep_alive': must be a finite duration >= 0");
  }
  if (config.host_cache_per_node.count() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameter pool field 'host_cache_per_node': must be >= 0 bytes (got ",
                     config.host_cache_per_node.count(), ")"));
  }
  return absl::OkStatus();
}

ParameterPool::ParameterPool(PoolConfig config) : config_(std::move(config)) {
  config_.nodes = std::max(1, config_.nodes);
  used_.assign(config_.nodes, common::Bytes(0));
  cached_.resize(config_.nodes);
  lost_.assign(config_.nodes, false);
}

absl::Status ParameterPool::AddModel(const std::string& model, common::Bytes bytes,
                                     absl::Time now) {
  if (model.empty()) {
    return absl::InvalidArgumentError("parameter pool: field 'model' must not be empty");
  }
  if (bytes.count() <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameter pool: model '", model, "': field 'bytes' must be > 0"));
  }
  if (models_.contains(model)) {
    return absl::AlreadyExistsError(
        absl::StrCat("parameter pool: model '", model, "' is already registered"));
  }
  if (config_.policy == HostCachePolicy::kOneCopy && PickHost(bytes, -1) < 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "parameter pool: no host has room for the one copy of '", model, "' (", bytes.gib(),
        " GiB; host_cache_per_node ", config_.host_cache_per_node.gib(), " GiB)"));
  }
  ModelState& m = models_[model];
  m.bytes = bytes;
  if (config_.policy == HostCachePolicy::kOneCopy) {
    PutHost(model, m, PickHost(bytes, -1), now);
  } else if (config_.policy == HostCachePolicy::kAllCache) {
    for (int n = 0; n < config_.nodes; ++n) {
      if (!lost_[n]) {
        PutHost(model, m, n, now);  // AllCache is the oracle: capacity is not enforced
      }
    }
  }
  return absl::OkStatus();
}

void ParameterPool::AddGpuCopy(const std::string& model, int64_t instance, const Endpoint& where) {
  auto it = models_.find(model);
  if (it == models_.end()) {
    return;
  }
  ModelState& m = it->second;
  m.gpu[instance] = where;
  if (config_.policy == HostCachePolicy::kOneCopy && config_.reclaim_host_while_on_gpu) {
    while (!m.host_use.empty()) {
      DropHost(model, m, m.host_use.begin()->first);
    }
  }
}

void ParameterPool::RemoveGpuCopy(const std::string& model, int64_t instance, absl::Time now) {
  auto it = models_.find(model);
  if (it == models_.end()) {
    return;
  }
  ModelState& m = it->second;
  auto g = m.gpu.find(instance);
  if (g == m.gpu.end()) {
    return;
  }
  const int node = g->second.node;
  m.gpu.erase(g);
  EnsureOneCopy(model, m, node, now);
}

void ParameterPool::TouchHost(const std::string& model, int node, absl::Time now) {
  auto it = models_.find(model);
  if (it == models_.end() || node < 0 || node >= config_.nodes || lost_[node]) {
    return;
  }
  ModelState& m = it->second;
  auto h = m.host_use.find(node);
  if (h != m.host_use.end()) {
    h->second = now;
    return;
  }
  if (config_.policy == HostCachePolicy::kKeepAlive && MakeRoom(node, m.bytes, model)) {
    PutHost(model, m, node, now);
  }
}

void ParameterPool::Expire(absl::Time now) {
  if (config_.policy != HostCachePolicy::kKeepAlive) {
    return;
  }
  for (int n = 0; n < config_.nodes; ++n) {
    // Iterate over a copy: DropHost edits cached_[n].
    const std::vector<std::string> names = cached_[n];
    for (const std::string& name : names) {
      ModelState& m = models_.at(name);
      if (m.host_use.at(n) + config_.keep_alive <= now) {
        DropHost(name, m, n);
      }
    }
  }
}

void ParameterPool::LoseHost(int node, absl::Time now) {
  if (node < 0 || node >= config_.nodes || lost_[node]) {
    return;
  }
  lost_[node] = true;
  const std::vector<std::string> names = cached_[node];
  for (const std::string& name : names) {
    ModelState& m = models_.at(name);
    DropHost(name, m, node);
    EnsureOneCopy(name, m, -1, now);
  }
}

std::vector<Endpoint> ParameterPool::Sources(const std::string& model) const {
  std::vector<Endpoint> out;
  auto it = models_.find(model);
  if (it == models_.end()) {
    return out;
  }
  const ModelState& m = it->second;
  std::vector<int64_t> instances;
  for (const auto& [instance, where] : m.gpu) {
    instances.push_back(instance);
  }
  std::sort(instances.begin(), instances.end());
  for (int64_t instance : instances) {
    out.push_back(m.gpu.at(instance));
  }
  std::vector<int> nodes;
  for (const auto& [node, last_use] : m.host_use) {
    nodes.push_back(node);
  }
  std::sort(nodes.begin(), nodes.end());
  for (int node : nodes) {
    Endpoint host;
    host.kind = Endpoint::Kind::kHost;
    host.node = node;
    out.push_back(host);
  }
  return out;
}

bool ParameterPool::HostHas(const std::string& model, int node) const {
  auto it = models_.find(model);
  return it != models_.end() && it->second.host_use.contains(node);
}

common::Bytes ParameterPool::HostCacheUsed(int node) const {
  return node >= 0 && node < config_.nodes ? used_[node] : common::Bytes(0);
}

common::Bytes ParameterPool::TotalHostCacheUsed() const {
  common::Bytes total(0);
  for (common::Bytes b : used_) {
    total += b;
  }
  return total;
}

int ParameterPool::GpuCopies(const std::string& model) const {
  auto it = models_.find(model);
  return it == models_.end() ? 0 : static_cast<int>(it->second.gpu.size());
}

int ParameterPool::HostCopies(const std::string& model) const {
  auto it = models_.find(model);
  return it == models_.end() ? 0 : static_cast<int>(it->second.host_use.size());
}

bool ParameterPool::InvariantHolds() const {
  const bool one = config_.policy == HostCachePolicy::kOneCopy;
  if (one || config_.policy == HostCachePolicy::kAllCache) {
    for (const auto& [name, m] : models_) {
      if (m.gpu.empty() && m.host_use.empty()) {
        return false;
      }
      if (one && m.host_use.size() > 1) {
        return false;
      }
    }
  }
  // Host accounting agrees with the copies, and capacity holds where it is enforced.
  std::vector<common::Bytes> used(config_.nodes, common::Bytes(0));
  for (const auto& [name, m] : models_) {
    for (const auto& [node, last_use] : m.host_use) {
      if (lost_[node]) {
        return false;
      }
      used[node] += m.bytes;
    }
  }
  for (int n = 0; n < config_.nodes; ++n) {
    if (used[n] != used_[n]) {
      return false;
    }
    const bool enforced =
        config_.policy == HostCachePolicy::kKeepAlive || (one && overcommits_ == 0);
    if (enforced && used_[n] > config_.host_cache_per_node) {
      return false;
    }
  }
  return true;
}

int ParameterPool::PickHost(common::Bytes bytes, int prefer) const {
  auto fits = [&](int n) {
    return n >= 0 && n < config_.nodes && !lost_[n] &&
           used_[n] + bytes <= config_.host_cache_per_node;
  };
  if (fits(prefer)) {
    return prefer;
  }
  int best = -1;
  for (int n = 0; n < config_.nodes; ++n) {
    if (fits(n) && (best < 0 || used_[n] < used_[best])) {
      best = n;
    }
  }
  return best;
}

void ParameterPool::PutHost(const std::string& model, ModelState& m, int node, absl::Time now) {
  m.host_use[node] = now;
  used_[node] += m.bytes;
  cached_[node].push_back(model);
}

void ParameterPool::DropHost(const std::string& model, ModelState& m, int node) {
  if (m.host_use.erase(node) == 0) {
    return;
  }
  used_[node] -= m.bytes;
  std::vector<std::string>& names = cached_[node];
  names.erase(std::find(names.begin(), names.end(), model));
}

void ParameterPool::EnsureOneCopy(const std::string& model, ModelState& m, int prefer,
                                  absl::Time now) {
  if (config_.policy != HostCachePolicy::kOneCopy || !m.gpu.empty() || !m.host_use.empty()) {
    return;
  }
  int node = PickHost(m.bytes, prefer);
  if (node < 0) {
    for (int n = 0; n < config_.nodes; ++n) {
      if (!lost_[n] && (node < 0 || used_[n] < used_[node])) {
        node = n;
      }
    }
    if (node < 0) {
      return;  // every host is lost: nothing can hold the copy
    }
    ++overcommits_;
  }
  PutHost(model, m, node, now);
}

bool ParameterPool::MakeRoom(int node, common::Bytes bytes, const std::string& keep) {
  if (bytes > config_.host_cache_per_node) {
    return false;
  }
  while (used_[node] + bytes > config_.host_cache_per_node) {
    const std::string* victim = nullptr;
    absl::Time oldest = absl::InfiniteFuture();
    for (const std::string& name : cached_[node]) {
      const absl::Time t = models_.at(name).host_use.at(node);
      if (name != keep && (victim == nullptr || t < oldest)) {
        victim = &name;
        oldest = t;
      }
    }
    if (victim == nullptr) {
      return false;
    }
    const std::string name = *victim;
    DropHost(name, models_.at(name), node);
  }
  return true;
}

}  // namespace sluice::core::blitz
