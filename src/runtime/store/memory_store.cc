// MemoryStore: a std::map, a lease table and a bounded change log under one mutex. Thread-safe.
// Lease expiry is lazy: every call first deletes the keys of leases past their deadline.
#include "runtime/store/memory_store.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

#include "common/env.h"
#include "common/status.h"
#include "runtime/common/loop_env.h"

namespace sluice::runtime {

// A cursor into the store's change log. Owned by one thread; must not outlive the store.
class MemoryStore::Watch final : public StoreWatch {
 public:
  Watch(MemoryStore& store, std::string prefix, int64_t cursor)
      : store_(store), prefix_(std::move(prefix)), cursor_(cursor) {}
  absl::StatusOr<std::vector<WatchEvent>> Poll() override {
    absl::MutexLock lock(&store_.mu_);
    store_.ExpireLocked();
    return store_.PollLocked(prefix_, cursor_);
  }

 private:
  MemoryStore& store_;
  const std::string prefix_;
  int64_t cursor_;  // the revision of the last event handed out (or the start revision)
};

MemoryStore::MemoryStore() : env_(nullptr), history_(kDefaultHistory) {}

MemoryStore::MemoryStore(const common::Env& env, int64_t history)
    : env_(&env), history_(history < 1 ? 1 : history) {}

MemoryStore::~MemoryStore() = default;

absl::Time MemoryStore::Now() const {
  return env_ != nullptr ? env_->Now() : MonotonicNow();
}

void MemoryStore::ExpireLeases() {
  absl::MutexLock lock(&mu_);
  ExpireLocked();
}

void MemoryStore::ExpireLocked() {
  const absl::Time now = Now();
  for (auto it = leases_.begin(); it != leases_.end();) {
    if (it->second.deadline > now) {
      ++it;
      continue;
    }
    const std::set<std::string> keys = std::move(it->second.keys);
    it = leases_.erase(it);
    for (const std::string& key : keys)
      EraseLocked(key);
  }
}

void MemoryStore::LogLocked(WatchEvent event) {
  event.revision = ++revision_;
  log_.push_back(std::move(event));
  while (static_cast<int64_t>(log_.size()) > history_) {
    compacted_ = log_.front().revision;
    log_.pop_front();
  }
}

int64_t MemoryStore::WriteLocked(std::string key, std::string value, LeaseId lease) {
  Entry& slot = kv_[key];
  if (slot.lease != lease) {
    if (auto old = leases_.find(slot.lease); old != leases_.end())
      old->second.keys.erase(key);
    if (lease != 0)
      leases_[lease].keys.insert(key);
    slot.lease = lease;
  }
  slot.value = value;
  ++slot.version;
  LogLocked(WatchEvent{WatchEvent::Type::kPut, std::move(key), std::move(value), slot.version});
  return slot.version;
}

void MemoryStore::EraseLocked(const std::string& key) {
  auto it = kv_.find(key);
  if (it == kv_.end())
    return;
  if (auto lease = leases_.find(it->second.lease); lease != leases_.end())
    lease->second.keys.erase(key);
  kv_.erase(it);
  LogLocked(WatchEvent{WatchEvent::Type::kDelete, key, "", 0});
}

absl::Status MemoryStore::CheckLeaseLocked(LeaseId lease) {
  if (lease != 0 && !leases_.contains(lease))
    return internal::LeaseNotFound(lease);
  return absl::OkStatus();
}

absl::Status MemoryStore::Put(std::string key, std::string value) {
  return PutLeased(std::move(key), std::move(value), 0).status();
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
  ExpireLocked();
  auto it = kv_.find(key);
  if (it == kv_.end())
    return std::optional<VersionedValue>();
  return std::optional<VersionedValue>(VersionedValue{it->second.value, it->second.version});
}

absl::Status MemoryStore::Delete(const std::string& key) {
  SLUICE_RETURN_IF_ERROR(internal::ValidateKey(key));
  absl::MutexLock lock(&mu_);
  ExpireLocked();
  EraseLocked(key);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> MemoryStore::List(
    const std::string& prefix) {
  SLUICE_ASSIGN_OR_RETURN(StoreSnapshot snapshot, ListSnapshot(prefix));
  std::vector<std::pair<std::string, std::string>> out;
  out.reserve(snapshot.items.size());
  for (auto& [key, v] : snapshot.items)
    out.emplace_back(std::move(key), std::move(v.value));
  return out;
}

absl::StatusOr<int64_t> MemoryStore::PutIf(std::string key, int64_t expected_version,
                                           std::string value) {
  return PutIfLeased(std::move(key), expected_version, std::move(value), 0);
}

absl::StatusOr<int64_t> MemoryStore::Revision() {
  absl::MutexLock lock(&mu_);
  ExpireLocked();
  return revision_;
}

absl::StatusOr<LeaseId> MemoryStore::GrantLease(absl::Duration ttl) {
  SLUICE_RETURN_IF_ERROR(internal::ValidateTtl(ttl));
  absl::MutexLock lock(&mu_);
  ExpireLocked();
  const LeaseId id = next_lease_++;
  leases_[id] = Lease{ttl, Now() + ttl, {}};
  return id;
}

absl::Status MemoryStore::KeepAlive(LeaseId lease) {
  absl::MutexLock lock(&mu_);
  ExpireLocked();
  auto it = leases_.find(lease);
  if (it == leases_.end())
    return internal::LeaseNotFound(lease);
  it->second.deadline = Now() + it->second.ttl;
  return absl::OkStatus();
}

absl::Status MemoryStore::RevokeLease(LeaseId lease) {
  absl::MutexLock lock(&mu_);
  ExpireLocked();
  auto it = leases_.find(lease);
  if (it == leases_.end())
    return absl::OkStatus();
  const std::set<std::string> keys = std::move(it->second.keys);
  leases_.erase(it);
  for (const std::string& key : keys)
    EraseLocked(key);
  return absl::OkStatus();
}

absl::StatusOr<int64_t> MemoryStore::PutIfLeased(std::string key, int64_t expected_version,
                                                 std::string value, LeaseId lease) {
  SLUICE_RETURN_IF_ERROR(internal::ValidateKey(key));
  SLUICE_RETURN_IF_ERROR(internal::ValidatePutIfVersion(expected_version));
  absl::MutexLock lock(&mu_);
  ExpireLocked();
  SLUICE_RETURN_IF_ERROR(CheckLeaseLocked(lease));
  auto it = kv_.find(key);
  const int64_t actual = it == kv_.end() ? 0 : it->second.version;
  if (actual != expected_version)
    return internal::VersionMismatch(key, expected_version, actual);
  return WriteLocked(std::move(key), std::move(value), lease);
}

absl::StatusOr<int64_t> MemoryStore::PutLeased(std::string key, std::string value,
                                               LeaseId lease) {
  SLUICE_RETURN_IF_ERROR(internal::ValidateKey(key));
  absl::MutexLock lock(&mu_);
  ExpireLocked();
  SLUICE_RETURN_IF_ERROR(CheckLeaseLocked(lease));
  return WriteLocked(std::move(key), std::move(value), lease);
}

absl::Status MemoryStore::DeleteIf(const std::string& key, int64_t expected_version) {
  SLUICE_RETURN_IF_ERROR(internal::ValidateKey(key));
  SLUICE_RETURN_IF_ERROR(internal::ValidateDeleteIfVersion(expected_version));
  absl::MutexLock lock(&mu_);
  ExpireLocked();
  auto it = kv_.find(key);
  const int64_t actual = it == kv_.end() ? 0 : it->second.version;
  if (actual != expected_version)
    return internal::VersionMismatch("DeleteIf", key, expected_version, actual);
  EraseLocked(key);
  return absl::OkStatus();
}

absl::StatusOr<StoreSnapshot> MemoryStore::ListSnapshot(const std::string& prefix) {
  absl::MutexLock lock(&mu_);
  ExpireLocked();
  StoreSnapshot out;
  out.revision = revision_;
  for (auto it = kv_.lower_bound(prefix); it != kv_.end(); ++it) {
    if (!absl::StartsWith(it->first, prefix))
      break;
    out.items.emplace_back(it->first, VersionedValue{it->second.value, it->second.version});
  }
  return out;
}

absl::StatusOr<std::unique_ptr<StoreWatch>> MemoryStore::WatchPrefix(const std::string& prefix,
                                                                     int64_t after_revision) {
  absl::MutexLock lock(&mu_);
  ExpireLocked();
  if (after_revision < compacted_) {
    return absl::OutOfRangeError(absl::StrCat("memory store: watch from revision ",
                                              after_revision, " is compacted (history starts at ",
                                              compacted_ + 1, ")"));
  }
  return std::make_unique<Watch>(*this, prefix, after_revision);
}

absl::StatusOr<std::vector<WatchEvent>> MemoryStore::PollLocked(const std::string& prefix,
                                                                int64_t& cursor) {
  if (cursor < compacted_) {
    return absl::OutOfRangeError(absl::StrCat("memory store: watch at revision ", cursor,
                                              " fell behind the history (starts at ",
                                              compacted_ + 1, "); re-list and watch again"));
  }
  std::vector<WatchEvent> out;
  if (cursor >= revision_)
    return out;  // nothing new (or a start revision still in the future)
  // log_ holds consecutive revisions compacted_+1 .. revision_, so the start is an index.
  const int64_t first = cursor - compacted_;
  for (auto it = log_.begin() + first; it != log_.end(); ++it) {
    if (absl::StartsWith(it->key, prefix))
      out.push_back(*it);
  }
  cursor = revision_;
  return out;
}

}  // namespace sluice::runtime
