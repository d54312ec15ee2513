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
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
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
  // Start and Cancel complete nothing: advance to `now` with AdvanceTo first, or flows due
  // before `now` keep their bandwidth until the next AdvanceTo.
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

  // Added (not in the original contract).
  int num_links() const { return static_cast<int>(links_.size()); }
  double link_capacity(int link) const { return links_[link].capacity; }
  absl::Time now() const { return now_; }

 private:
  struct FlowState {
    FlowId id = 0;
    uint64_t tag = 0;
    double total = 0;       // bytes
    double rem = 0;         // bytes left at t_upd
    double t_upd = 0;       // seconds since start_
    double rate = 0;        // bytes/s
    double cap = 0;         // rate cap, bytes/s
    double next_rate = 0;   // progressive-filling result before it is applied
    uint32_t gen = 0;       // bumped on every rate change or removal (stale heap entries)
    uint64_t mark = 0;      // component search epoch
    bool live = false;
    bool frozen = false;    // scratch for progressive filling
    bool fresh = false;     // started, rate not computed yet
    Path path;              // capacity kept across reuse of the slot
    std::vector<int> pos;   // pos[i]: index of this flow in links_[path[i]].flows
  };
  struct LinkState {
    double capacity = 0;
    double load = 0;        // sum of rates (bytes/s)
    double bytes = 0;       // bytes moved until t_upd
    double t_upd = 0;
    uint64_t mark = 0;
    // Progressive-filling scratch.
    double residual = 0;
    double fixed_load = 0;  // rates of flows the recomputation leaves as they are
    int unfrozen = 0;
    std::vector<int> flows;  // slots of the flows crossing the link (one entry per crossing)
  };
  struct Due {
    double t;  // completion time, seconds since start_
    int slot;
    uint32_t gen;
  };

  double Sec(absl::Time t) const;
  absl::Time TimeOf(double sec) const;
  double RemainingAt(const FlowState& f, double t) const;
  void SettleLink(LinkState& l, double t);
  void Step(double t);  // moves to t without completing anything
  int AllocSlot();
  void Detach(int slot);
  void CollectComponent(double threshold);
  // Recomputes rates of the flows that can change after flows with rates >= `threshold` came or
  // went on seed_links_ (see the .cc).
  void Recompute(double threshold);
  void FillComponent();
  void FillInit();
  double LevelOf(int link) const;
  void Freeze(int slot, double rate);
  void PushDirty();
  int LowestLink();
  void PushDue(int slot);
  void PopStale();
  void CompleteDue(double t, std::vector<FlowId>& out);

  std::vector<LinkState> links_;
  std::vector<FlowState> flows_;
  std::vector<int> free_slots_;
  absl::flat_hash_map<FlowId, int> slot_of_;
  std::vector<Due> due_;  // min-heap on (t, slot)
  absl::Time start_;
  absl::Time now_;
  double now_s_ = 0;
  FlowId next_id_ = 1;
  uint64_t epoch_ = 0;  // marks for searches and filling rounds; never wraps in practice
  // Scratch reused by every recomputation (no allocation in steady state).
  std::vector<int> seed_links_;
  std::vector<int> comp_links_;
  std::vector<int> comp_flows_;
  std::vector<int> dirty_links_;
  std::vector<std::pair<double, int>> link_heap_;  // (fair level, link), min-heap, lazy
  std::vector<std::pair<double, int>> cap_order_;  // (cap, slot) ascending
};

}  // namespace sluice::core::net

#endif  // SLUICE_CORE_NET_FLOW_NETWORK_H_
