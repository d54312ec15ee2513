// Cluster membership over a ClusterStore (issue 12): the well-known keys, the record a node agent
// registers under /sluice/nodes/<id>, and LeasedKey, which keeps one key alive under a lease.
// Used by the agent (its node record), the controller (its leader record, through
// LeaderElection) and their tests. Thread safety: none; each object has one owner (a loop).
#ifndef SLUICE_RUNTIME_CLUSTER_MEMBERSHIP_H_
#define SLUICE_RUNTIME_CLUSTER_MEMBERSHIP_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "runtime/store/store.h"

namespace sluice::runtime {

// Live nodes: one key per agent, deleted with its lease when the agent stops renewing it.
inline constexpr char kNodesPrefix[] = "/sluice/nodes/";
// The leading controller's record (LeaderRecord JSON), under the leader's lease.
inline constexpr char kLeaderKey[] = "/sluice/leader";

// What a node agent announces. `address` is the agent API's "host:port" as others reach it.
struct NodeRecord {
  std::string id;
  std::string address;
  int gpus = 0;
  std::string device;  // "emulated" or "cuda"
};
std::string NodeRecordJson(const NodeRecord& n);
// InvalidArgument naming the field for a malformed record.
absl::StatusOr<NodeRecord> ParseNodeRecord(const std::string& json);
std::string NodeKey(const std::string& id);

// A controller's identity in the election: `address` is its admin API's "host:port".
struct LeaderRecord {
  std::string id;
  std::string address;
};
std::string LeaderRecordJson(const LeaderRecord& l);
absl::StatusOr<LeaderRecord> ParseLeaderRecord(const std::string& json);

// Keeps `key` = `value` in the store under a lease of `ttl` (>= 1 s): Tick() grants the lease and
// puts the key, then renews it every ttl/3; when the lease is gone (it expired while the store or
// this process was away) it grants a new one and puts the key again. A failed round is retried on
// the next Tick. The owner calls Tick at least every period().
class LeasedKey {
 public:
  LeasedKey(ClusterStore& store, std::string key, std::string value, absl::Duration ttl);
  LeasedKey(const LeasedKey&) = delete;
  LeasedKey& operator=(const LeasedKey&) = delete;
  // Revokes the lease (best effort), deleting the key at once.
  ~LeasedKey();

  // One round at `now`; the status of this round's store call (OK when nothing was due).
  [[nodiscard]] absl::Status Tick(absl::Time now);
  bool registered() const { return lease_ != 0; }
  absl::Duration period() const { return ttl_ / 3; }
  // Times the key was (re-)put after its lease was lost (0 after the first registration).
  int reregistrations() const { return reregistrations_; }

 private:
  ClusterStore& store_;
  const std::string key_;
  const std::string value_;
  const absl::Duration ttl_;
  LeaseId lease_ = 0;
  absl::Time next_renewal_ = absl::InfinitePast();
  int registrations_ = 0;
  int reregistrations_ = 0;
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_CLUSTER_MEMBERSHIP_H_
