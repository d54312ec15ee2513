// Concurrent scale-out rounds (LlmSimConfig::merge_scale_rounds): a round that starts while an
// earlier round of the same model is still loading is planned over the pool's sources *and* the
// earlier round's loading members, with every endpoint already sending scale traffic marked
// busy so that Algorithm 1's pruning keeps the new chains off saturated NICs; the new hops are
// appended to the earlier round's LayeredMulticast, so a member chained after a loading one
// forwards each layer as it arrives. Without this, each round's plan drew from the same few
// unpruned sources and every round slowed together (the engine README's former known issue).
#include <algorithm>
#include <utility>

#include "common/status.h"
#include "core/blitz/multicast_plan.h"
#include "sim/llm/engine.h"

namespace sluice::sim::llm {

namespace blitz = core::blitz;

namespace {

bool SameEndpoint(const blitz::Endpoint& a, const blitz::Endpoint& b) {
  return a.kind == b.kind && a.node == b.node && a.gpus == b.gpus;
}

bool Sending(const blitz::LayeredMulticast& mc, int hop) {
  return !mc.failed(hop) && mc.layers_received(hop) < mc.num_layers();
}

}  // namespace

// The pool's sources followed by load l's loading members (their hops in member_hop). An
// endpoint that already feeds an unfinished hop of l is outcast-busy.
std::vector<blitz::Endpoint> LlmEngine::RoundSources(int l, std::vector<int>& member_hop) const {
  const Load& load = loads_[l];
  const blitz::LayeredMulticast& mc = *load.mc;
  std::vector<blitz::Endpoint> sources = LiveSources(load.model);
  for (blitz::Endpoint& s : sources) {
    for (const int h : mc.children(-1)) {
      if (Sending(mc, h) && SameEndpoint(load.hop_source[h], s)) s.outcast_busy = true;
    }
  }
  for (int h = 0; h < mc.num_hops(); ++h) {
    const Instance& in = *insts_[load.hop_instance[h]];
    if (!Sending(mc, h) || in.state != InstState::kLoading) continue;
    blitz::Endpoint e = EndpointOf(in);
    e.incast_busy = false;
    e.outcast_busy = std::any_of(mc.children(h).begin(), mc.children(h).end(),
                                 [&](int c) { return Sending(mc, c); });
    sources.push_back(std::move(e));
    member_hop.push_back(h);
  }
  return sources;
}

bool LlmEngine::JoinRound(int fn, const std::vector<int>& insts) {
  const std::string& model = fns_[fn].model->spec().name;
  int l = -1;
  for (const int a : active_loads_) {
    if (loads_[a].model == model) l = a;  // the latest round of the model
  }
  if (l < 0) return false;
  std::vector<int> member_hop;
  std::vector<blitz::Endpoint> sources = RoundSources(l, member_hop);
  const int pool_sources = static_cast<int>(sources.size() - member_hop.size());
  const std::vector<blitz::Endpoint> targets = TargetEndpoints(insts);
  absl::StatusOr<blitz::MulticastPlan> plan =
      blitz::PlanMulticast(sources, targets, *topo_, policy_.set.plan);
  if (!plan.ok()) return false;
  blitz::PlanHops ph = blitz::HopsOfPlan(*plan, sources, targets, *topo_);
  Load& load = loads_[l];
  const int base = load.mc->num_hops();
  std::vector<blitz::Endpoint> hop_source(ph.hops.size());
  for (blitz::HopSpec& h : ph.hops) {
    if (h.parent >= 0) h.parent += base;
  }
  for (const blitz::Chain& c : plan->chains) {
    if (c.targets.empty()) continue;
    const size_t k = std::find(ph.hop_target.begin(), ph.hop_target.end(), c.targets[0]) -
                     ph.hop_target.begin();
    if (c.source >= pool_sources) {
      ph.hops[k].parent = member_hop[c.source - pool_sources];  // chained after a loading member
    } else {
      hop_source[k] = sources[c.source];
    }
  }
  if (!load.mc->AddHops(*net_, std::move(ph.hops), now()).ok()) return false;
  for (size_t k = 0; k < ph.hop_target.size(); ++k) {
    load.hop_source.push_back(hop_source[k]);
    BeginLoading(l, insts[ph.hop_target[k]]);
  }
  return true;
}

}  // namespace sluice::sim::llm
