// NodeJoin: a node agent joining a cluster (issue 12, `sluice agent --join URI`): its NodeRecord
// (id, agent address, GPUs) under /sluice/nodes/<id> in the cluster store, under a lease renewed
// every ttl/3 from the agent's event loop, so the controller sees the node while the agent lives
// and loses it within ttl of its death. Owned by AgentDaemon::Impl. Thread safety: Start from
// the owner thread; then the loop's timer; destroy after the loop stopped.
#ifndef SLUICE_RUNTIME_AGENT_NODE_JOIN_H_
#define SLUICE_RUNTIME_AGENT_NODE_JOIN_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "runtime/cluster/membership.h"
#include "runtime/http/http.h"
#include "runtime/store/store.h"

namespace sluice::runtime {

class NodeJoin {
 public:
  // Opens the store at `uri` (OpenStore; `loop` is the clock of embedded backends), registers
  // `record` once (Unavailable naming the URI when that fails) and keeps it alive from `loop`.
  static absl::StatusOr<std::unique_ptr<NodeJoin>> Start(const std::string& uri,
                                                         http::EventLoop& loop,
                                                         const NodeRecord& record,
                                                         absl::Duration ttl);
  // Revokes the lease: the node leaves at once (a clean stop, unlike a crash).
  ~NodeJoin();

 private:
  NodeJoin(http::EventLoop& loop, std::unique_ptr<Store> store, const NodeRecord& record,
           absl::Duration ttl);
  void Tick();

  http::EventLoop& loop_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<LeasedKey> key_;
  std::string last_error_;  // logged once per change
};

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_AGENT_NODE_JOIN_H_
