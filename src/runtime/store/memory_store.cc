// MemoryStore: a std::map under one mutex. Thread-safe.
#include "runtime/store/memory_store.h"

#include "absl/strings/match.h"

#include "common/status.h"

namespace sluice::runtime {

absl::Status MemoryStore::Put(std::string key, std::string value) {
  SLUICE_RETURN_IF_ERROR(internal::ValidateKey(key));
  absl::MutexLock lock(&mu_);
  VersionedValue& slot = kv_[std::move(key)];
  slot.value = std::move(value);
  ++slot.version;
  return absl::OkStatus();
}

absl::StatusOr<std::optional<std::string>> MemoryStore::Get(const std::string& key) {
  SLUICE_ASSIGN_OR_RETURN(std::optional<VersionedValue> v, GetVersioned(key));
  if (!v.has_value())
    return std::optional<std::string>();
  return std::optional<std::string>(std::move(v->value));
}

absl::StatusOr<std::optional<VersionedValue>> MemoryStore::GetVersioned(const std::string& key) {
  SLUICE_RETURN_IF_ERROR(internal::ValidateKey(key));
  absl::MutexLock lock(&mu_);
  auto it = kv_.find(key);
  if (it == kv_.end())
    return std::optional<VersionedValue>();
  return std::optional<VersionedValue>(it->second);
}

absl::Status MemoryStore::Delete(const std::string& key) {
  SLUICE_RETURN_IF_ERROR(internal::ValidateKey(key));
  absl::MutexLock lock(&mu_);
  kv_.erase(key);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> MemoryStore::List(
    const std::string& prefix) {
  absl::MutexLock lock(&mu_);
  std::vector<std::pair<std::string, std::string>> out;
  for (auto it = kv_.lower_bound(prefix); it != kv_.end(); ++it) {
    if (!absl::StartsWith(it->first, prefix))
      break;
    out.emplace_back(it->first, it->second.value);
  }
  return out;
}

absl::StatusOr<int64_t> MemoryStore::PutIf(std::string key, int64_t expected_version,
                                           std::string value) {
  SLUICE_RETURN_IF_ERROR(internal::ValidateKey(key));
  if (expected_version < 0) {
    return absl::InvalidArgumentError("store: PutIf expected_version must be >= 0");
  }
  absl::MutexLock lock(&mu_);
  auto it = kv_.find(key);
  const int64_t actual = it == kv_.end() ? 0 : it->second.version;
  if (actual != expected_version)
    return internal::VersionMismatch(key, expected_version, actual);
  VersionedValue& slot = kv_[std::move(key)];
  slot.value = std::move(value);
  slot.version = actual + 1;
  return slot.version;
}

}  // namespace sluice::runtime
