// LeaderElection (leader_election.h).
#include "runtime/cluster/leader_election.h"

#include <utility>

namespace sluice::runtime {

LeaderElection::LeaderElection(ClusterStore& store, LeaderRecord self, absl::Duration ttl)
    : store_(store), self_(std::move(self)), ttl_(ttl), mirror_(store, kLeaderKey) {}

LeaderElection::~LeaderElection() {
  Resign();
}

LeaderElection::Change LeaderElection::Tick(absl::Time now) {
  return leading() ? TickLeader(now) : TickFollower(now);
}

void LeaderElection::ApplyMirror() {
  leader_.reset();
  auto it = mirror_.items().find(kLeaderKey);  // the prefix also matches longer keys
  if (it == mirror_.items().end())
    return;
  absl::StatusOr<LeaderRecord> l = ParseLeaderRecord(it->second);
  leader_ = l.ok() ? *l : LeaderRecord{"(unreadable leader record)", ""};
}

LeaderElection::Change LeaderElection::TickLeader(absl::Time now) {
  if (now < next_renewal_)
    return Change::kNone;
  last_error_ = store_.KeepAlive(lease_);
  if (last_error_.ok()) {
    next_renewal_ = now + ttl_ / 3;
    return Change::kNone;
  }
  if (!absl::IsNotFound(last_error_))
    return Change::kNone;  // store away: keep leading until it says the lease is gone
  role_ = Role::kFollower;
  lease_ = 0;
  version_ = 0;
  leader_.reset();
  return Change::kDeposed;
}

LeaderElection::Change LeaderElection::TickFollower(absl::Time now) {
  absl::StatusOr<std::vector<PrefixMirror::Change>> changes = mirror_.Sync();
  if (!changes.ok()) {
    last_error_ = changes.status();
    return Change::kNone;
  }
  ApplyMirror();
  if (leader_.has_value())
    return Change::kNone;
  absl::StatusOr<LeaseId> lease = store_.GrantLease(ttl_);
  if (!lease.ok()) {
    last_error_ = lease.status();
    return Change::kNone;
  }
  absl::StatusOr<int64_t> put =
      store_.PutIfLeased(kLeaderKey, 0, LeaderRecordJson(self_), *lease);
  if (!put.ok()) {  // another controller won (FailedPrecondition) or the store failed
    last_error_ = absl::IsFailedPrecondition(put.status()) ? absl::OkStatus() : put.status();
    (void)store_.RevokeLease(*lease);
    return Change::kNone;
  }
  last_error_ = absl::OkStatus();
  role_ = Role::kLeader;
  lease_ = *lease;
  version_ = *put;
  next_renewal_ = now + ttl_ / 3;
  leader_ = self_;
  return Change::kElected;
}

void LeaderElection::Resign() {
  if (!leading())
    return;
  (void)store_.DeleteIf(kLeaderKey, version_);
  (void)store_.RevokeLease(lease_);
  role_ = Role::kFollower;
  lease_ = 0;
  version_ = 0;
  leader_.reset();
}

}  // namespace sluice::runtime

namespace sluice::runtime {

void LeaderElection::Abandon() {
  role_ = Role::kFollower;
  lease_ = 0;
  version_ = 0;
  leader_.reset();
}

}  // namespace sluice::runtime
