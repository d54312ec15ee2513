// The LLM engine's parameter loads (SSD, host cache or network multicast, layer by layer through
// core::blitz::LayeredMulticast) and live scale-out (a loading prefill instance paired with the
// most loaded one; the pair splits each batch's layers by the zigzag or best-effort plan).
#include <algorithm>
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

void LlmEngine::StartLoadOf(int fn, const std::vector<int>& insts) {
  Function& f = fns_[fn];
  const std::string& model = f.model->spec().name;
  AdvanceNet();
  std::vector<blitz::HopSpec> hops;
  std::vector<int> hop_instance;
  if (policy_.set.source == core::llm::LoadSource::kNetworkMulticast) {
    std::vector<blitz::Endpoint> sources = pool_->Sources(model);
    for (blitz::Endpoint& s : sources) {
      if (s.kind != blitz::Endpoint::Kind::kGpuInstance || s.gpus.empty()) continue;
      const int owner = gpu_owner_[s.node * config_.cluster.gpus_per_node + s.gpus[0]];
      if (owner >= 0) s = EndpointOf(*insts_[owner]);
    }
    std::vector<blitz::Endpoint> targets;
    for (const int i : insts) {
      blitz::Endpoint t = EndpointOf(*insts_[i]);
      t.outcast_busy = t.incast_busy = false;  // not serving yet: its NICs carry nothing
      targets.push_back(std::move(t));
    }
    absl::StatusOr<blitz::MulticastPlan> plan =
        blitz::PlanMulticast(sources, targets, *topo_, policy_.set.plan);
    if (plan.ok()) {
      blitz::PlanHops ph = blitz::HopsOfPlan(*plan, sources, targets, *topo_);
      hops = std::move(ph.hops);
      for (const int t : ph.hop_target) hop_instance.push_back(insts[t]);
    }
  }
  if (hops.empty()) {  // SSD / host cache (or no network source at all)
    for (const int i : insts) {
      const Instance& in = *insts_[i];
      hops.push_back(LocalHop(*topo_, pool_->HostHas(model, in.node), in.node, in.gpus));
      hop_instance.push_back(i);
    }
  }
  const int spec_layers = f.model->spec().num_layers;
  std::vector<int64_t> layer_bytes(spec_layers, f.model->spec().LayerBytes().count());
  const int l = static_cast<int>(loads_.size());
  absl::StatusOr<blitz::LayeredMulticast> mc =
      blitz::LayeredMulticast::Create(std::move(hops), std::move(layer_bytes), l + 1);
  SLUICE_CHECK(mc.ok());
  loads_.push_back(Load{});
  Load& load = loads_.back();
  load.mc.emplace(std::move(*mc));
  load.hop_instance = hop_instance;
  load.remaining = static_cast<int>(hop_instance.size());
  active_loads_.push_back(l);
  for (size_t h = 0; h < hop_instance.size(); ++h) {
    Instance& in = *insts_[hop_instance[h]];
    in.state = InstState::kLoading;
    in.load_start = now();
    in.load = l;
    in.hop = static_cast<int>(h);
  }
  load.mc->Start(*net_, now());
  ScheduleNet();
  if (policy_.set.live != core::llm::LiveMode::kOff && deps_.plan_live) {
    for (const int i : insts) {
      if (insts_[i]->role == BatchRole::kPrefill) PairLive(fn, i);
    }
  }
}

void LlmEngine::OnLayer(int l, int hop) {
  Load& load = loads_[l];
  if (load.mc->layers_received(hop) < load.mc->num_layers()) return;
  FinishLoad(load.hop_instance[hop]);
  if (--load.remaining == 0) {
    load.mc.reset();
    active_loads_.erase(std::remove(active_loads_.begin(), active_loads_.end(), l),
                        active_loads_.end());
  }
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
    in.layer_load_time = std::max(1e-3, left_s / std::max(1e-9, layer_exec_s));
    in.layers_loaded = loaded;
    absl::StatusOr<core::llm::ZigzagPlan> plan = deps_.plan_live(in);
    src.live_x = plan.ok() ? plan->target_layers : std::vector<int>{std::min(loaded, layers / 2)};
    src.live_loaded = loaded;
    src.live_next = 0;
  }
  const int x = std::clamp(src.live_x[src.live_next++], 0, std::min(loaded, layers / 2));
  return full * (static_cast<double>(layers - x) / layers);
}

}  // namespace sluice::sim::llm
