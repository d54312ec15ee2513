// Layer-by-layer execution of a multicast plan on a FlowNetwork: a tree of hops (a chain is a
// path of the tree, an NVLink broadcast a fan-out from its leader), each hop forwarding layer j
// as soon as its parent has received it (serial forwarding with layer pipelining, §5.1 Fig. 10),
// one flow per tensor-parallel shard. Used by the LLM simulator for parameter loads so that a
// receiver can start on early layers (live scaling) and a dead member can be routed around.
// Pure (time comes in as an argument); thread-compatible; borrows the FlowNetwork per call.
#ifndef SLUICE_CORE_BLITZ_LAYERED_MULTICAST_H_
#define SLUICE_CORE_BLITZ_LAYERED_MULTICAST_H_

#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "core/blitz/multicast_plan.h"
#include "core/net/flow_network.h"

namespace sluice::core::blitz {

// One hop of the tree: the receiver of hop h gets layers from the receiver of hop `parent`
// (-1: from the source, which has every layer). shard_paths[i] carries shard i (an empty path is
// a local copy and then needs a finite shard_rate_cap, else it completes at once).
struct HopSpec {
  int parent = -1;
  std::vector<net::Path> shard_paths;
  double shard_rate_cap = std::numeric_limits<double>::infinity();  // bytes/s per shard flow
};

// The hops of a plan in tree order (parents before children): chain c's k-th target's hop has
// the (k-1)-th as parent; a broadcast is a pipelined chain from its leader through its members
// in order (a ring broadcast over NVLink). `hop_target[h]` names the
// target index of hop h. Hop caps are hop_cap_fraction x the hop path's bottleneck capacity.
struct PlanHops {
  std::vector<HopSpec> hops;
  std::vector<int> hop_target;
};
PlanHops HopsOfPlan(const MulticastPlan& plan, const std::vector<Endpoint>& sources,
                    const std::vector<Endpoint>& targets, const net::Topology& topology);

// Per hop: kWaiting (parent has not delivered the next layer) <-> kSending (one layer's shard
// flows in flight) -> kDone (all layers received); any state -> kFailed (FailHop).
class LayeredMulticast {
 public:
  struct Delivery {
    int hop = 0;
    int layer = 0;
  };

  // layer_bytes[j]: bytes of layer j for the whole model (split evenly across shards; >= 0).
  // InvalidArgument naming the field for an empty tree, a parent that is not an earlier hop, a
  // hop without shards or a negative layer size.
  static absl::StatusOr<LayeredMulticast> Create(std::vector<HopSpec> hops,
                                                 std::vector<int64_t> layer_bytes, uint64_t tag);

  // Starts every hop that can send. Flows carry `tag`; the owner routes each completion of a
  // flow with that tag to OnFlowDone.
  void Start(net::FlowNetwork& net, absl::Time now);
  // A flow of this transfer completed at `now`; returns the layer it completed at its hop, if
  // any. Unknown ids are ignored.
  std::optional<Delivery> OnFlowDone(net::FlowNetwork& net, net::FlowId id, absl::Time now);
  // The receiver of `hop` died: its flows are cancelled, it is marked failed, and each child is
  // re-attached to `new_parent_of_children` (the failed hop's parent when -2) with new shard
  // paths from `reroute_paths(child)`; children keep the layers they have. Returns the children.
  template <typename PathsFn>
  std::vector<int> FailHop(net::FlowNetwork& net, int hop, absl::Time now, PathsFn reroute_paths,
                           int new_parent_of_children = -2);

  // Added (issue 10, concurrent rounds). Appends hops to a transfer in progress; hop indices
  // continue from num_hops(), and each parent is -1 (a source), an existing hop or an earlier
  // appended one. Starts those that can send. A later scale-out round thus chains after members
  // still loading instead of sharing the earlier round's sources. InvalidArgument naming the
  // field as Create (nothing is added then).
  [[nodiscard]] absl::Status AddHops(net::FlowNetwork& net, std::vector<HopSpec> hops,
                                     absl::Time now);
  // Added (issue 10, failures). Moves live hop `hop` under `new_parent` (-1: a source; else an
  // earlier live hop) with new shard paths, e.g. when the source feeding it died: its in-flight
  // layer restarts, received layers stay.
  void RerouteHop(net::FlowNetwork& net, int hop, absl::Time now, int new_parent,
                  std::vector<net::Path> paths);
  int parent(int hop) const { return hops_[hop].spec.parent; }
  // Hops whose parent is `hop` (-1: the roots).
  const std::vector<int>& children(int hop) const {
    return hop < 0 ? roots_ : hops_[hop].children;
  }

  int num_hops() const { return static_cast<int>(hops_.size()); }
  int num_layers() const { return static_cast<int>(layer_bytes_.size()); }
  int layers_received(int hop) const { return hops_[hop].received; }
  // When hop's receiver had layer j; InfiniteFuture when not (yet).
  absl::Time layer_time(int hop, int layer) const;
  bool failed(int hop) const { return hops_[hop].failed; }
  // Predicted time at which hop's receiver has each layer, under the network's current rates (a
  // hop not sending yet is assumed to get its paths' bottleneck, capped by shard_rate_cap) and
  // its parent's predicted arrivals; received layers give their actual times. For live-scaling
  // plans (zigzag's per-layer load times). Re-ask after any flow starts, ends or is cancelled.
  // InfiniteFuture for a failed hop.
  std::vector<absl::Time> PredictArrivals(const net::FlowNetwork& net, int hop) const;
  // Every live hop has every layer.
  bool done() const;
  uint64_t tag() const { return tag_; }

 private:
  struct Hop {
    HopSpec spec;
    std::vector<int> children;
    int received = 0;                    // layers fully received
    int pending_shards = 0;              // > 0 while sending layer `received`
    std::vector<net::FlowId> in_flight;  // its shard flows, ascending ids (deterministic order)
    bool failed = false;
    std::vector<absl::Time> at;  // per layer
  };
  struct Shard {
    int hop = 0;
    int shard = 0;
  };

  LayeredMulticast() = default;
  int Available(int parent) const;  // layers the parent has (all for the source)
  void TrySend(net::FlowNetwork& net, int hop, absl::Time now);
  void Reparent(int child, int new_parent, std::vector<net::Path> paths);
  void CancelHop(net::FlowNetwork& net, int hop, absl::Time now);
  struct HopSpeed {
    double rate = 0;  // bytes/s
    absl::Time free;  // when the layer in flight completes (now when idle)
  };
  HopSpeed HopRate(const net::FlowNetwork& net, int hop) const;

  std::vector<Hop> hops_;
  std::vector<int> roots_;
  std::vector<int64_t> layer_bytes_;
  uint64_t tag_ = 0;
  absl::flat_hash_map<net::FlowId, Shard> flows_;
};

template <typename PathsFn>
std::vector<int> LayeredMulticast::FailHop(net::FlowNetwork& net, int hop, absl::Time now,
                                           PathsFn reroute_paths, int new_parent_of_children) {
  CancelHop(net, hop, now);
  hops_[hop].failed = true;
  const int parent = new_parent_of_children == -2 ? hops_[hop].spec.parent : new_parent_of_children;
  std::vector<int> children = hops_[hop].children;
  hops_[hop].children.clear();
  for (int c : children) {
    CancelHop(net, c, now);  // its in-flight layer restarts from the new parent
    Reparent(c, parent, reroute_paths(c));
  }
  for (int c : children) {
    TrySend(net, c, now);
  }
  return children;
}

}  // namespace sluice::core::blitz

#endif  // SLUICE_CORE_BLITZ_LAYERED_MULTICAST_H_
