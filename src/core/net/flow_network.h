// Flow-level network model: flows over paths of capacitated links share bandwidth max-min fairly
// (progressive filling), recomputed whenever a flow starts, finishes or is cancelled. Used by the
// LLM simulator for parameter loads (layer-granular), multicast forwarding and KV-cache transfers,
// and by QUART's stage-to-stage activations. Pure: time comes in as an argument. Thread-compatible.
//
// CONTRACT (lead, issue 10): shared by src/sim/llm and later users. Extend, do not change.
#ifndef SLUICE_CORE_NET_FLOW_NETWORK_H_
#define SLUICE_CORE_NET_FLOW_NETWORK_H_

#include <cstdint>
#include <limits>
#include <vector>

#include "absl/time/time.h"
#include "core/net/topology.h"

namespace sluice::core::net {

using FlowId = int64_t;

class FlowNetwork {
 public:
  // `capacity[i]` is link i's capacity in bytes/s (> 0). `start` is the model's time origin.
  FlowNetwork(std::vector<double> capacity, absl::Time start);

  // Starts a flow of `bytes` (> 0) over `path` at `now` (>= the last call's time). `rate_cap`
  // bounds its rate (bytes/s; BlitzScale caps scale traffic sharing a NIC with serving). An empty
  // path means a local copy at `rate_cap` (must then be finite). `tag` is the caller's. Rates of
  // all flows are recomputed.
  FlowId Start(absl::Time now, const Path& path, int64_t bytes,
               double rate_cap = std::numeric_limits<double>::infinity(), uint64_t tag = 0);
  // Removes an active flow (no-op for finished or unknown ids); rates recomputed.
  void Cancel(absl::Time now, FlowId id);

  // Time at which the earliest active flow completes under the current rates; InfiniteFuture()
  // when no flow is active. The caller schedules an event there and calls AdvanceTo.
  absl::Time NextCompletion() const;
  // Moves time to `now` (>= the last call's time), accounting bytes moved, and returns the flows
  // that completed at or before `now` (remaining < 1 byte), in completion order; they are removed
  // and the remaining flows' rates recomputed.
  std::vector<FlowId> AdvanceTo(absl::Time now);

  bool active(FlowId id) const;
  uint64_t tag(FlowId id) const;        // 0 for unknown ids
  double rate(FlowId id) const;         // bytes/s now; 0 for unknown ids
  double remaining(FlowId id) const;    // bytes left as of the last call; 0 for unknown ids
  // Time at which flow `id` will have moved `bytes_done` bytes in total, under current rates
  // (for layer boundaries inside one flow); InfiniteFuture() when its rate is 0 or id unknown.
  absl::Time TimeAtBytes(FlowId id, double bytes_done) const;
  size_t num_active() const;
  double link_load(int link) const;     // sum of current rates on the link (bytes/s)
  double link_bytes(int link) const;    // bytes moved over the link since start
};

}  // namespace sluice::core::net

#endif  // SLUICE_CORE_NET_FLOW_NETWORK_H_
