// LeaderElection: one leader among N controllers through a ClusterStore lease (issue 12).
// Campaign = PutIfLeased(kLeaderKey, 0, record, lease): it succeeds only while the key is
// absent; the leader renews its lease every ttl/3; followers mirror the key (PrefixMirror) and
// campaign as soon as it is gone (its lease expired when the leader died, or it resigned).
// Driven by ControllerDaemon's loop timer; pure of clocks (time comes in). Thread safety: none.
//
// State machine (Role):
//   kFollower --campaign won--> kLeader --lease lost (KeepAlive NotFound, key deleted)-->
//   kFollower; kLeader --Resign()--> kFollower. A leader whose store is unreachable stays
//   kLeader (its lease may outlive the outage, as etcd's does across a restart) until the store
//   answers that the lease is gone.
#ifndef SLUICE_RUNTIME_CLUSTER_LEADER_ELECTION_H_
#define SLUICE_RUNTIME_CLUSTER_LEADER_ELECTION_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

#include "runtime/cluster/membership.h"
#include "runtime/cluster/prefix_mirror.h"
#include "runtime/store/store.h"

namespace sluice::runtime {

class LeaderElection {
 public:
  enum class Role { kFollower, kLeader };
  // What one Tick changed.
  enum class Change { kNone, kElected, kDeposed };

  // `ttl` >= 1 s (the store rejects less): a dead leader is replaced within about ttl + one
  // tick. `self.id` must be unique among the controllers.
  LeaderElection(ClusterStore& store, LeaderRecord self, absl::Duration ttl);
  LeaderElection(const LeaderElection&) = delete;
  LeaderElection& operator=(const LeaderElection&) = delete;
  ~LeaderElection();  // Resign()s

  // One round at `now`: the leader renews its lease when due; a follower reads the key's
  // changes and campaigns when it is absent. Call it often (e.g. every 100-250 ms).
  Change Tick(absl::Time now);
  Role role() const { return role_; }
  bool leading() const { return role_ == Role::kLeader; }
  // The leader as last seen (this controller while leading); nullopt when none is known.
  const std::optional<LeaderRecord>& leader() const { return leader_; }
  // The last store error seen (OK once a round succeeds), for status pages and logs.
  const absl::Status& last_error() const { return last_error_; }
  // Deletes the key if it is still ours and revokes the lease. Idempotent.
  void Resign();
  // Forgets the lease without telling the store, as a crash would (tests: the key then expires
  // with its lease).
  void Abandon();

 private:
  Change TickLeader(absl::Time now);
  Change TickFollower(absl::Time now);
  void ApplyMirror();

  ClusterStore& store_;
  const LeaderRecord self_;
  const absl::Duration ttl_;
  PrefixMirror mirror_;
  Role role_ = Role::kFollower;
  LeaseId lease_ = 0;
  int64_t version_ = 0;  // our key's version while leading
  absl::Time next_renewal_ = absl::InfinitePast();
  std::optional<LeaderRecord> leader_;
  absl::Status last_error_;
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_CLUSTER_LEADER_ELECTION_H_
