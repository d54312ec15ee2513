// The LLM engine's parameter loads (SSD, host cache or network multicast, layer by layer through
// core::blitz::LayeredMulticast) and live scale-out (a loading prefill instance paired with the
// most loaded one; the pair splits each batch's layers by the zigzag or best-effort plan).
#include <algorithm>
#include <cmath>
#include <utility>

#include "common/status.h"
#include "core/blitz/multicast_plan.h"
#include "sim/llm/engine.h"

namespace sluice::sim::llm {

namespace blitz = core::blitz;

// One root hop per instance: shard i from the node's host cache (host -> GPU i) when the pool
// says the host has the model, else from the GPU's SSD share.
static blitz::HopSpec LocalHop(const core::net::Topology& topo, bool host, int node,
                               const std::vector<int>& gpus) {
  blitz::HopSpec hop;
  for (const int g : gpus) {
    hop.shard_paths.push_back(host ? topo.HostToGpu(node, {node, g}) : topo.SsdToGpu({node, g}));
  }
  return hop;
}

// The pool's sources of `model` with each GPU copy's current role (busy flags). Without NVLink
// a GPU's one PCIe GPU-GPU link carries both directions (core/net/topology.h), so a decode
// instance with a prefill instance on its node receives KV over the link it would send
// parameters through: it is outcast-busy too (the cause of blitzscale's higher TBT p99 on
// cluster B slices, docs/REPRODUCTION.md).
std::vector<blitz::Endpoint> LlmEngine::LiveSources(const std::string& model) const {
  std::vector<blitz::Endpoint> sources = pool_->Sources(model);
  const int per_node = config_.cluster.gpus_per_node;
  for (blitz::Endpoint& s : sources) {
    if (s.kind != blitz::Endpoint::Kind::kGpuInstance || s.gpus.empty()) continue;
    const int owner = gpu_owner_[s.node * per_node + s.gpus[0]];
    if (owner < 0) continue;
    s = EndpointOf(*insts_[owner]);
    if (!s.incast_busy || config_.cluster.nvlink_gbps > 0) continue;
    for (int g = 0; g < per_node; ++g) {
      const int other = gpu_owner_[s.node * per_node + g];
      if (other >= 0 && insts_[other]->role == BatchRole::kPrefill &&
          insts_[other]->state == InstState::kServing) {
        s.outcast_busy = true;
      }
    }
  }
  return sources;
}

// The new instances as plan targets: not serving yet, their NICs carry nothing.
std::vector<blitz::Endpoint> LlmEngine::TargetEndpoints(const std::vector<int>& insts) const {
  std::vector<blitz::Endpoint> targets;
  for (const int i : insts) {
    blitz::Endpoint t = EndpointOf(*insts_[i]);
    t.outcast_busy = t.incast_busy = false;
    targets.push_back(std::move(t));
  }
  return targets;
}

// Algorithm 1's plan as a hop tree over the pool's sources; empty when no plan is possible.
LlmEngine::LoadTree LlmEngine::MulticastTree(int fn, const std::vector<int>& insts) const {
  LoadTree tree;
  std::vector<blitz::Endpoint> sources = LiveSources(fns_[fn].model->spec().name);
  const std::vector<blitz::Endpoint> targets = TargetEndpoints(insts);
  absl::StatusOr<blitz::MulticastPlan> plan =
      blitz::PlanMulticast(sources, targets, *topo_, policy_.set.plan);
  if (!plan.ok()) return tree;
  blitz::PlanHops ph = blitz::HopsOfPlan(*plan, sources, targets, *topo_);
  tree.hops = std::move(ph.hops);
  for (const int t : ph.hop_target) tree.hop_instance.push_back(insts[t]);
  tree.hop_source.resize(tree.hops.size());
  for (const blitz::Chain& c : plan->chains) {
    if (c.targets.empty()) continue;
    const auto it = std::find(ph.hop_target.begin(), ph.hop_target.end(), c.targets[0]);
    tree.hop_source[it - ph.hop_target.begin()] = sources[c.source];
  }
  return tree;
}

void LlmEngine::StartLoadOf(int fn, const std::vector<int>& placed) {
  std::vector<int> insts;  // an instance can fail while it starts
  for (const int i : placed) {
    if (insts_[i]->state == InstState::kStarting) insts.push_back(i);
  }
  if (insts.empty()) return;
  AdvanceNet();
  const bool network = policy_.set.source == core::llm::LoadSource::kNetworkMulticast;
  if (!(network && config_.merge_scale_rounds && JoinRound(fn, insts))) {
    LoadTree tree;
    if (network) tree = MulticastTree(fn, insts);
    if (tree.hops.empty()) tree = LocalTree(fn, insts);  // SSD / host cache, or no network source
    NewLoad(fn, std::move(tree));
  }
  ScheduleNet();
  if (policy_.set.live != core::llm::LiveMode::kOff && deps_.plan_live) {
    for (const int i : insts) {
      if (insts_[i]->role == BatchRole::kPrefill) PairLive(fn, i);
    }
  }
}

// One root hop per instance from its node's host cache or SSD.
LlmEngine::LoadTree LlmEngine::LocalTree(int fn, const std::vector<int>& insts) const {
  const std::string& model = fns_[fn].model->spec().name;
  LoadTree tree;
  for (const int i : insts) {
    const Instance& in = *insts_[i];
    const bool host = pool_->HostHas(model, in.node);
    tree.hops.push_back(LocalHop(*topo_, host, in.node, in.gpus));
    tree.hop_instance.push_back(i);
    blitz::Endpoint src;
    src.kind = host ? blitz::Endpoint::Kind::kHost : blitz::Endpoint::Kind::kSsd;
    src.node = in.node;
    tree.hop_source.push_back(src);
  }
  return tree;
}

void LlmEngine::NewLoad(int fn, LoadTree tree) {
  const core::LlmModelSpec& spec = fns_[fn].model->spec();
  std::vector<int64_t> layer_bytes(spec.num_layers, spec.LayerBytes().count());
  const int l = static_cast<int>(loads_.size());
  absl::StatusOr<blitz::LayeredMulticast> mc =
      blitz::LayeredMulticast::Create(std::move(tree.hops), std::move(layer_bytes), l + 1);
  SLUICE_CHECK(mc.ok());
  loads_.push_back(Load{});
  Load& load = loads_.back();
  load.mc.emplace(std::move(*mc));
  load.model = spec.name;
  load.hop_source = std::move(tree.hop_source);
  active_loads_.push_back(l);
  for (const int inst : tree.hop_instance) BeginLoading(l, inst);
  load.mc->Start(*net_, now());
}

// The instance receives at the next hop of load l.
void LlmEngine::BeginLoading(int l, int inst) {
  Load& load = loads_[l];
  Instance& in = *insts_[inst];
  in.state = InstState::kLoading;
  in.load_start = now();
  in.load = l;
  in.hop = static_cast<int>(load.hop_instance.size());
  load.hop_instance.push_back(inst);
  ++load.remaining;
}

void LlmEngine::OnLayer(int l, int hop) {
  Load& load = loads_[l];
  if (load.mc->layers_received(hop) < load.mc->num_layers()) return;
  FinishLoad(load.hop_instance[hop]);
  LoadMemberGone(l);
}

void LlmEngine::FinishLoad(int inst) {
  Instance& in = *insts_[inst];
  Function& f = fns_[in.fn];
  --f.loading[RoleIndex(in.role)];
  ++f.stats.loads;
  f.stats.load_s_sum += absl::ToDoubleSeconds(now() - in.load_start);
  // ServerlessLLM keeps what a host loaded (the pool ignores this under other policies).
  pool_->TouchHost(f.model->spec().name, in.node, now());
  MarkServing(inst);
  if (in.pair >= 0) {
    // Live scale-out ends: the pair splits and the source's unstarted work is re-balanced.
    Instance& src = *insts_[in.pair];
    src.pair = -1;
    src.live_x.clear();
    in.pair = -1;
    in.live_target = false;
    for (const int seq : src.batcher->TakeUnstarted()) Route(seq);
  }
}

// §5.2's pairing: the new prefill instance works with the most loaded prefill instance that is
// not already paired; the source keeps its queue and serves new requests as usual, and while the
// target loads each source batch runs only the layers the target does not take.
void LlmEngine::PairLive(int fn, int target) {
  Function& f = fns_[fn];
  int best = -1;
  int64_t best_load = -1;
  for (const int i : f.serving[RoleIndex(BatchRole::kPrefill)]) {
    const Instance& in = *insts_[i];
    if (in.pair >= 0) continue;
    const int64_t load = in.batcher->queued_prefill_tokens();
    if (load > best_load) {
      best = i;
      best_load = load;
    }
  }
  if (best < 0 || best_load <= 0) return;
  insts_[best]->pair = target;
  insts_[best]->live_x.clear();
  insts_[target]->pair = best;
  insts_[target]->live_target = true;
  ++f.stats.live_scales;
}

// The source's share of one batch: the target runs the first x layers, the source the other
// L - x, and the two overlap across consecutive batches (pipelining), so the source's iteration
// shrinks to (L - x) / L of the whole. x comes from the live plan over the batches queued now,
// re-planned whenever the target gains a layer.
absl::Duration LlmEngine::LiveIterationTime(int inst, absl::Duration full) {
  Instance& src = *insts_[inst];
  const Instance& tgt = *insts_[src.pair];
  if (tgt.load < 0 || !loads_[tgt.load].mc.has_value()) return full;
  const blitz::LayeredMulticast& mc = *loads_[tgt.load].mc;
  const int layers = mc.num_layers();
  const int loaded = mc.layers_received(tgt.hop);
  if (loaded != src.live_loaded || src.live_next >= src.live_x.size()) {
    core::llm::ZigzagInput in;
    in.num_layers = layers;
    const Function& f = fns_[src.fn];
    const int64_t batches = 1 + src.batcher->queued_prefill_tokens() / f.config.max_batch_tokens;
    in.weight.assign(static_cast<size_t>(std::clamp<int64_t>(batches, 1, 16)), 1.0);
    const std::vector<absl::Time> at = mc.PredictArrivals(*net_, tgt.hop);
    const double layer_exec_s = absl::ToDoubleSeconds(full) / layers;
    const double left_s =
        loaded < layers ? absl::ToDoubleSeconds(at.back() - now()) / (layers - loaded) : 0;
    // Quarter-layer resolution of the load time: plans repeat across pairs and re-plans, and an
    // ILP solve costs tens of ms, so equal inputs share one solve.
    const int q = static_cast<int>(std::lround(
        4 * std::min(1e6, std::max(1e-3, left_s / std::max(1e-9, layer_exec_s)))));
    in.layer_load_time = std::max(1, q) / 4.0;
    in.layers_loaded = loaded;
    const LivePlanKey key{layers, static_cast<int>(in.weight.size()), loaded, q};
    auto it = live_plans_.find(key);
    if (it == live_plans_.end()) {
      absl::StatusOr<core::llm::ZigzagPlan> plan = deps_.plan_live(in);
      it = live_plans_
               .emplace(key, plan.ok() ? plan->target_layers
                                       : std::vector<int>{std::min(loaded, layers / 2)})
               .first;
    }
    src.live_x = it->second;
    src.live_loaded = loaded;
    src.live_next = 0;
  }
  const int x = std::clamp(src.live_x[src.live_next++], 0, std::min(loaded, layers / 2));
  return full * (static_cast<double>(layers - x) / layers);
}

}  // namespace sluice::sim::llm
