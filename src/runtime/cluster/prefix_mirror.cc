// PrefixMirror (prefix_mirror.h): list once, then poll the watch; re-list on a broken watch.
#include "runtime/cluster/prefix_mirror.h"

#include <utility>

#include "common/status.h"

namespace sluice::runtime {

PrefixMirror::PrefixMirror(ClusterStore& store, std::string prefix)
    : store_(store), prefix_(std::move(prefix)) {}

absl::StatusOr<std::vector<PrefixMirror::Change>> PrefixMirror::Relist() {
  watch_.reset();
  SLUICE_ASSIGN_OR_RETURN(StoreSnapshot snap, store_.ListSnapshot(prefix_));
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<StoreWatch> watch,
                          store_.WatchPrefix(prefix_, snap.revision));
  std::map<std::string, std::string> fresh;
  for (auto& [key, v] : snap.items)
    fresh.emplace(key, std::move(v.value));
  std::vector<Change> changes;  // the difference between what we had and the listing
  for (const auto& [key, value] : items_) {
    if (!fresh.contains(key))
      changes.push_back({key, std::nullopt});
  }
  for (const auto& [key, value] : fresh) {
    auto old = items_.find(key);
    if (old == items_.end() || old->second != value)
      changes.push_back({key, value});
  }
  items_ = std::move(fresh);
  watch_ = std::move(watch);
  ++lists_;
  return changes;
}

absl::StatusOr<std::vector<PrefixMirror::Change>> PrefixMirror::Sync() {
  if (watch_ == nullptr)
    return Relist();
  absl::StatusOr<std::vector<WatchEvent>> events = watch_->Poll();
  if (!events.ok())
    return Relist();  // compaction or a lost connection: start again from a listing
  std::vector<Change> changes;
  for (WatchEvent& e : *events) {
    if (e.type == WatchEvent::Type::kDelete) {
      if (items_.erase(e.key) > 0)
        changes.push_back({e.key, std::nullopt});
    } else {
      items_[e.key] = e.value;
      changes.push_back({e.key, std::move(e.value)});
    }
  }
  return changes;
}

}  // namespace sluice::runtime
