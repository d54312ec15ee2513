// PrefixMirror: a local copy of every key under a store prefix, kept current by ListSnapshot +
// WatchPrefix (re-listing, and reporting the difference, when the watch breaks, e.g. across an
// etcd restart). The controller mirrors /sluice/nodes/ with it; LeaderElection the leader key.
// Thread safety: none; one owner (a daemon's loop).
#ifndef SLUICE_RUNTIME_CLUSTER_PREFIX_MIRROR_H_
#define SLUICE_RUNTIME_CLUSTER_PREFIX_MIRROR_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "runtime/store/store.h"

namespace sluice::runtime {

class PrefixMirror {
 public:
  // One key's change: `value` is nullopt when the key went away.
  struct Change {
    std::string key;
    std::optional<std::string> value;
  };

  PrefixMirror(ClusterStore& store, std::string prefix);

  // Brings the mirror up to date and returns what changed since the previous Sync, oldest
  // first (the first Sync reports every key as added). A store error leaves the mirror as it
  // was (the next Sync re-lists) and is returned.
  absl::StatusOr<std::vector<Change>> Sync();
  const std::map<std::string, std::string>& items() const { return items_; }
  // Times the mirror (re-)listed: 1 after the first Sync, more after broken watches.
  int lists() const { return lists_; }

 private:
  absl::StatusOr<std::vector<Change>> Relist();

  ClusterStore& store_;
  const std::string prefix_;
  std::unique_ptr<StoreWatch> watch_;
  std::map<std::string, std::string> items_;
  int lists_ = 0;
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_CLUSTER_PREFIX_MIRROR_H_
