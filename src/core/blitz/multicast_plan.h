// BlitzScale's scale planner (Algorithm 1, §5.1): given parameter sources (serving instances'
// GPUs, hosts with a cached copy) and the target instances of a scale-out, group targets that
// share an NVLink domain (one member receives, the rest get an NVLink broadcast), prune sources
// whose outgoing link would interfere with serving (e.g. a prefill instance sending KV), and build
// serial forwarding chains greedily, ordered by link speed, one chain per source. Pure.
//
// CONTRACT (lead, issue 10): used by src/sim/llm. Extend, do not change.
#ifndef SLUICE_CORE_BLITZ_MULTICAST_PLAN_H_
#define SLUICE_CORE_BLITZ_MULTICAST_PLAN_H_

#include <vector>

#include "absl/status/statusor.h"
#include "core/net/topology.h"

namespace sluice::core::blitz {

// A place parameters can come from or go to. A GPU endpoint is an instance: its GPUs hold one
// tensor-parallel shard each (shard i on gpus[i]); shard-parallel transfers go GPU i -> GPU i.
struct Endpoint {
  enum class Kind { kGpuInstance, kHost, kSsd };
  Kind kind = Kind::kGpuInstance;
  int node = 0;
  std::vector<int> gpus;     // kGpuInstance: the instance's GPUs on `node` (size = tp)
  bool outcast_busy = false;  // serving traffic leaves through its NICs (prefill -> decode KV)
  bool incast_busy = false;   // serving traffic enters through its NICs (decode receiving KV)
};

struct PlanOptions {
  bool nvlink_grouping = true;      // Algorithm 1 line 1
  bool prune_interference = true;   // line 2 (off = the "-interference-free plan" ablation)
  bool order_by_link_speed = true;  // lines 4-11: chain order by bandwidth
  bool multi_chain = true;          // one chain per usable source (off = one chain)
  // Added. A source pruned for outcast still serves the targets in its own NVLink domain (that
  // traffic never touches its NIC).
  bool local_nvlink_from_pruned = true;
  // Added. Rate fraction suggested for a hop that cannot avoid a NIC carrying serving traffic
  // (every source busy, a busy target that must forward, an incast-busy receiver); the paper
  // "only use[s] the half bandwidth" in this case (§5.1). Applied only with prune_interference.
  double shared_nic_cap_fraction = 0.5;
};

struct Chain {
  int source = 0;            // index into sources
  std::vector<int> targets;  // indices into targets, in forwarding order
  // Added. hop_cap_fraction[i]: fraction of the hop into targets[i] the caller should cap its
  // rate to (1 = uncapped); see PlanOptions::shared_nic_cap_fraction.
  std::vector<double> hop_cap_fraction;
};
struct NvlinkBroadcast {
  int from = 0;              // target index that receives over the network (or a chain)
  std::vector<int> to;       // targets in the same NVLink domain served from it
};
struct MulticastPlan {
  std::vector<Chain> chains;
  std::vector<NvlinkBroadcast> broadcasts;
  int pruned_sources = 0;    // sources dropped for interference
  // Added. Every source was outcast-busy, so pruning kept them all (hops capped instead).
  bool interference_fallback = false;
};

// Added. Aggregate bytes/s of a shard-parallel transfer of one model copy from `from` to the
// GPU instance `to` when alone on the network: shard i travels from GPU i (host and SSD sources:
// host memory / local SSD) to to.gpus[i]; shards sharing a link split it. 0 when `from` is an SSD
// on another node; infinity when every shard path is empty (same GPUs). Endpoints must be valid.
double HopBandwidth(const Endpoint& from, const Endpoint& to, const net::Topology& topology);
// Added. The network path of each shard of that hop (shard i -> to.gpus[i]), for starting one
// FlowNetwork flow per shard; empty when `from` is an SSD on another node.
std::vector<net::Path> ShardPaths(const Endpoint& from, const Endpoint& to,
                                  const net::Topology& topology);

// Every target appears exactly once, either in a chain or in a broadcast's `to`. InvalidArgument
// when there are no usable sources or an endpoint names a GPU outside the topology.
absl::StatusOr<MulticastPlan> PlanMulticast(const std::vector<Endpoint>& sources,
                                            const std::vector<Endpoint>& targets,
                                            const net::Topology& topology,
                                            const PlanOptions& options = {});

}  // namespace sluice::core::blitz

#endif  // SLUICE_CORE_BLITZ_MULTICAST_PLAN_H_
