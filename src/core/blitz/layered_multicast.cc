// Layer-pipelined multicast over a FlowNetwork (see the header).
#include "core/blitz/layered_multicast.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

#include "common/status.h"

namespace sluice::core::blitz {

PlanHops HopsOfPlan(const MulticastPlan& plan, const std::vector<Endpoint>& sources,
                    const std::vector<Endpoint>& targets, const net::Topology& topology) {
  PlanHops out;
  std::vector<int> hop_of_target(targets.size(), -1);
  auto add = [&](int parent, const Endpoint& from, int target, double cap_fraction) {
    HopSpec hop;
    hop.parent = parent;
    hop.shard_paths = ShardPaths(from, targets[target], topology);
    if (cap_fraction < 1) {
      double bottleneck = std::numeric_limits<double>::infinity();
      for (const net::Path& p : hop.shard_paths) {
        bottleneck = std::min(bottleneck, topology.PathCapacity(p));
      }
      hop.shard_rate_cap = cap_fraction * bottleneck;
    }
    hop_of_target[target] = static_cast<int>(out.hops.size());
    out.hops.push_back(std::move(hop));
    out.hop_target.push_back(target);
  };
  for (const Chain& chain : plan.chains) {
    int parent = -1;
    for (size_t i = 0; i < chain.targets.size(); ++i) {
      const Endpoint& from = i == 0 ? sources[chain.source] : targets[chain.targets[i - 1]];
      const double fraction = i < chain.hop_cap_fraction.size() ? chain.hop_cap_fraction[i] : 1;
      add(parent, from, chain.targets[i], fraction);
      parent = hop_of_target[chain.targets[i]];
    }
  }
  // An NVLink broadcast is a pipelined chain through the domain (NCCL's ring broadcast): each
  // member forwards to the next, so every GPU port carries one incoming and one outgoing flow
  // rather than the leader's port carrying all of them.
  for (const NvlinkBroadcast& b : plan.broadcasts) {
    int from = b.from;
    for (int t : b.to) {
      add(hop_of_target[from], targets[from], t, 1.0);
      from = t;
    }
  }
  return out;
}

absl::StatusOr<LayeredMulticast> LayeredMulticast::Create(std::vector<HopSpec> hops,
                                                          std::vector<int64_t> layer_bytes,
                                                          uint64_t tag) {
  if (hops.empty()) {
    return absl::InvalidArgumentError("layered multicast: field 'hops' is empty");
  }
  for (size_t j = 0; j < layer_bytes.size(); ++j) {
    if (layer_bytes[j] < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("layered multicast: field 'layer_bytes[", j, "]' must be >= 0"));
    }
  }
  LayeredMulticast m;
  m.tag_ = tag;
  m.layer_bytes_ = std::move(layer_bytes);
  for (size_t h = 0; h < hops.size(); ++h) {
    const int parent = hops[h].parent;
    if (parent < -1 || parent >= static_cast<int>(h)) {
      return absl::InvalidArgumentError(absl::StrCat("layered multicast: field 'hops[", h,
                                                     "].parent' = ", parent,
                                                     " must be -1 (the source) or an earlier hop"));
    }
    if (hops[h].shard_paths.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("layered multicast: field 'hops[", h, "].shard_paths' is empty"));
    }
    Hop hop;
    hop.spec = std::move(hops[h]);
    hop.at.assign(m.layer_bytes_.size(), absl::InfiniteFuture());
    m.hops_.push_back(std::move(hop));
    (parent < 0 ? m.roots_ : m.hops_[parent].children).push_back(static_cast<int>(h));
  }
  return m;
}

absl::Status LayeredMulticast::AddHops(net::FlowNetwork& net, std::vector<HopSpec> hops,
                                       absl::Time now) {
  const int base = num_hops();
  for (size_t k = 0; k < hops.size(); ++k) {
    const int h = base + static_cast<int>(k);
    const int parent = hops[k].parent;
    if (parent < -1 || parent >= h || (parent >= 0 && parent < base && hops_[parent].failed)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "layered multicast: field 'hops[", h, "].parent' = ", parent,
          " must be -1 (the source) or an earlier live hop"));
    }
    if (hops[k].shard_paths.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("layered multicast: field 'hops[", h, "].shard_paths' is empty"));
    }
  }
  for (HopSpec& spec : hops) {
    const int h = num_hops();
    const int parent = spec.parent;
    Hop hop;
    hop.spec = std::move(spec);
    hop.at.assign(layer_bytes_.size(), absl::InfiniteFuture());
    hops_.push_back(std::move(hop));
    (parent < 0 ? roots_ : hops_[parent].children).push_back(h);
  }
  for (int h = base; h < num_hops(); ++h) {
    TrySend(net, h, now);
  }
  return absl::OkStatus();
}

void LayeredMulticast::RerouteHop(net::FlowNetwork& net, int hop, absl::Time now, int new_parent,
                                  std::vector<net::Path> paths) {
  SLUICE_CHECK_MSG(!hops_[hop].failed, "a failed hop cannot be rerouted");
  SLUICE_CHECK_MSG(new_parent < 0 || !hops_[new_parent].failed, "the new parent is dead");
  CancelHop(net, hop, now);
  std::vector<int>& siblings = hops_[hop].spec.parent < 0 ? roots_
                                                          : hops_[hops_[hop].spec.parent].children;
  siblings.erase(std::remove(siblings.begin(), siblings.end(), hop), siblings.end());
  Reparent(hop, new_parent, std::move(paths));
  TrySend(net, hop, now);
}

void LayeredMulticast::Start(net::FlowNetwork& net, absl::Time now) {
  for (int h : roots_) {
    TrySend(net, h, now);
  }
}

int LayeredMulticast::Available(int parent) const {
  return parent < 0 ? num_layers() : hops_[parent].received;
}

void LayeredMulticast::TrySend(net::FlowNetwork& net, int hop, absl::Time now) {
  Hop& h = hops_[hop];
  if (h.failed || h.pending_shards > 0 || h.received >= num_layers() ||
      Available(h.spec.parent) <= h.received) {
    return;
  }
  const int64_t total = layer_bytes_[h.received];
  const int shards = static_cast<int>(h.spec.shard_paths.size());
  for (int s = 0; s < shards; ++s) {
    // Bytes split evenly; the first (total % shards) shards carry one more.
    const int64_t bytes = total / shards + (s < total % shards ? 1 : 0);
    const net::FlowId id =
        net.Start(now, h.spec.shard_paths[s], bytes, h.spec.shard_rate_cap, tag_);
    flows_[id] = Shard{hop, s};
    h.in_flight.push_back(id);
  }
  h.pending_shards = shards;
}

std::optional<LayeredMulticast::Delivery> LayeredMulticast::OnFlowDone(net::FlowNetwork& net,
                                                                       net::FlowId id,
                                                                       absl::Time now) {
  auto it = flows_.find(id);
  if (it == flows_.end()) {
    return std::nullopt;
  }
  const int hop = it->second.hop;
  flows_.erase(it);
  Hop& h = hops_[hop];
  h.in_flight.erase(std::find(h.in_flight.begin(), h.in_flight.end(), id));
  if (--h.pending_shards > 0) {
    return std::nullopt;
  }
  const Delivery d{hop, h.received};
  h.at[h.received++] = now;
  TrySend(net, hop, now);
  for (int c : h.children) {
    TrySend(net, c, now);
  }
  return d;
}

void LayeredMulticast::CancelHop(net::FlowNetwork& net, int hop, absl::Time now) {
  // In id order, never hash-map order: the order of cancellations decides the floating-point
  // round-off of the recomputed rates, and runs must be repeatable.
  Hop& h = hops_[hop];
  for (net::FlowId id : h.in_flight) {
    net.Cancel(now, id);
    flows_.erase(id);
  }
  h.in_flight.clear();
  h.pending_shards = 0;
}

void LayeredMulticast::Reparent(int child, int new_parent, std::vector<net::Path> paths) {
  SLUICE_CHECK_MSG(new_parent < child, "a hop's parent must be an earlier hop");
  Hop& c = hops_[child];
  c.spec.parent = new_parent;
  if (!paths.empty()) {
    c.spec.shard_paths = std::move(paths);
  }
  (new_parent < 0 ? roots_ : hops_[new_parent].children).push_back(child);
}

// Aggregate bytes/s of a hop: its flows' current rates while sending (and when the in-flight
// layer completes), else its paths' bottlenecks under the shard cap (free now).
LayeredMulticast::HopSpeed LayeredMulticast::HopRate(const net::FlowNetwork& net, int hop) const {
  const Hop& h = hops_[hop];
  double rate = 0;
  absl::Time free = net.now();
  if (h.pending_shards > 0) {
    for (net::FlowId id : h.in_flight) {
      const double r = net.rate(id);
      rate += r;
      free = std::max(
          free, r > 0 ? net.now() + absl::Seconds(net.remaining(id) / r) : absl::InfiniteFuture());
    }
    return {rate, free};
  }
  for (const net::Path& p : h.spec.shard_paths) {
    double bottleneck = h.spec.shard_rate_cap;
    for (int l : p) {
      bottleneck = std::min(bottleneck, net.link_capacity(l));
    }
    rate += bottleneck;
  }
  return {rate, free};
}

std::vector<absl::Time> LayeredMulticast::PredictArrivals(const net::FlowNetwork& net,
                                                          int hop) const {
  const Hop& h = hops_[hop];
  const absl::Time now = net.now();
  std::vector<absl::Time> out(layer_bytes_.size(), absl::InfiniteFuture());
  if (h.failed) {
    return out;
  }
  const std::vector<absl::Time> parent = h.spec.parent < 0
                                             ? std::vector<absl::Time>(layer_bytes_.size(), now)
                                             : PredictArrivals(net, h.spec.parent);
  std::copy(h.at.begin(), h.at.begin() + h.received, out.begin());
  const auto [rate, in_flight_done] = HopRate(net, hop);
  absl::Time free = in_flight_done;  // when the hop has finished what it is sending
  if (h.pending_shards > 0) {
    out[h.received] = free;
  }
  const int first = h.received + (h.pending_shards > 0 ? 1 : 0);
  for (int j = first; j < num_layers(); ++j) {
    const absl::Time start = std::max(free, parent[j]);
    out[j] = rate > 0 && start != absl::InfiniteFuture()
                 ? start + absl::Seconds(static_cast<double>(layer_bytes_[j]) / rate)
                 : absl::InfiniteFuture();
    free = out[j];
  }
  return out;
}

absl::Time LayeredMulticast::layer_time(int hop, int layer) const {
  return hops_[hop].at[layer];
}

bool LayeredMulticast::done() const {
  return std::all_of(hops_.begin(), hops_.end(),
                     [&](const Hop& h) { return h.failed || h.received == num_layers(); });
}

}  // namespace sluice::core::blitz
