// The LLM engine's failure injection (LlmSimConfig::failures): a GPU or a whole node dies; the
// instance holding it dies with it (InstState::kFailed), its sequences are re-queued for
// recompute, a parameter load it was part of is routed around it (LayeredMulticast::FailHop) and
// loads it fed continue from the remaining sources (LayeredMulticast::RerouteHop).
#include <algorithm>
#include <utility>

#include "common/status.h"
#include "core/blitz/multicast_plan.h"
#include "sim/llm/engine.h"

namespace sluice::sim::llm {

namespace blitz = core::blitz;

void LlmEngine::OnFailure(int index) {
  const FailureConfig& fc = config_.failures[index];
  AdvanceNet();
  const uint64_t bits = fc.gpu < 0 ? all_gpus_mask_ : uint64_t{1} << fc.gpu;
  dead_mask_[fc.node] |= bits;
  free_mask_[fc.node] &= ~bits;
  if (fc.gpu < 0) pool_->LoseHost(fc.node, now());
  std::vector<int> victims;
  for (int g = 0; g < config_.cluster.gpus_per_node; ++g) {
    if ((bits >> g & 1) == 0) continue;
    const int owner = gpu_owner_[fc.node * config_.cluster.gpus_per_node + g];
    if (owner >= 0 && std::find(victims.begin(), victims.end(), owner) == victims.end()) {
      victims.push_back(owner);
    }
  }
  for (const int inst : victims) Kill(inst);
  RerouteDeadSources();
  ScheduleNet();
}

void LlmEngine::Kill(int inst) {
  Instance& in = *insts_[inst];
  Function& f = fns_[in.fn];
  const InstState was = in.state;
  if (was == InstState::kGone || was == InstState::kFailed) return;
  in.state = InstState::kFailed;
  ++f.stats.instance_failures;
  if (in.iter_timer != 0) env_.Cancel(in.iter_timer);
  in.iter_timer = 0;
  if (in.pair >= 0) {  // a live pair ends: the survivor serves (or loads) on its own
    Instance& other = *insts_[in.pair];
    other.pair = -1;
    other.live_x.clear();
    other.live_target = false;
    in.pair = -1;
  }
  if (was == InstState::kStarting || was == InstState::kLoading) --f.loading[RoleIndex(in.role)];
  if (was == InstState::kLoading) FailLoadHop(inst);
  if (was == InstState::kServing) RemoveServing(inst);
  if (was == InstState::kServing || was == InstState::kDraining) {
    pool_->RemoveGpuCopy(f.model->spec().name, inst, now());
  }
  for (const int g : in.gpus) {
    gpu_owner_[in.node * config_.cluster.gpus_per_node + g] = -1;
    if ((dead_mask_[in.node] >> g & 1) == 0) free_mask_[in.node] |= uint64_t{1} << g;
  }
  SetHeld(-f.tp);
  RequeueTransfers(inst);
  for (const int seq : in.batcher->Abort()) {
    ++f.stats.requeued;
    Route(seq);
  }
  RetryPdPending(in.fn);
}

// P/D sequences between instances when one end dies: KV flowing from the dead instance is lost
// (recompute); KV flowing to it is still on the prefill side and waits for another decode
// instance; prefilled sequences still waiting on the dead instance are recomputed.
void LlmEngine::RequeueTransfers(int inst) {
  Function& f = fns_[insts_[inst]->fn];
  std::vector<std::pair<core::net::FlowId, int>> flows;
  for (const auto& [id, seq] : kv_flows_) {
    if (seqs_[seq].instance == inst || seqs_[seq].decode_instance == inst) {
      flows.emplace_back(id, seq);
    }
  }
  std::sort(flows.begin(), flows.end());  // cancel in id order: repeatable round-off
  std::vector<int> hit;
  for (const auto& [id, seq] : flows) {
    net_->Cancel(now(), id);
    kv_flows_.erase(id);
    if (std::find(hit.begin(), hit.end(), seq) == hit.end()) hit.push_back(seq);
  }
  std::vector<int> retry;
  for (const int seq : hit) {
    Seq& s = seqs_[seq];
    Instance& dst = *insts_[s.decode_instance];
    --dst.incoming;
    s.pending_flows = 0;
    if (s.instance == inst) {
      if (dst.state != InstState::kFailed) dst.batcher->UnreserveKv(s.kv);
      Requeue(seq);
    } else {
      s.decode_instance = -1;
      retry.push_back(seq);
    }
  }
  std::deque<int> keep;
  for (const int seq : f.pd_pending) {
    if (seqs_[seq].instance == inst) {
      Requeue(seq);
    } else {
      keep.push_back(seq);
    }
  }
  f.pd_pending.swap(keep);
  for (auto it = retry.rbegin(); it != retry.rend(); ++it) f.pd_pending.push_front(*it);
}

// A prefilled sequence whose KV was lost: prompt + generated tokens are prefilled again.
void LlmEngine::Requeue(int seq) {
  Seq& s = seqs_[seq];
  ++s.epoch;
  s.kv = 0;
  s.prefill_target = s.prompt + s.tokens;
  s.prefilled = 0;
  s.instance = s.decode_instance = -1;
  s.pending_flows = 0;
  s.state = SeqState::kQueued;
  ++fns_[s.fn].stats.requeued;
  Route(seq);
}

// The dead instance's hop: its flows stop and its children re-attach to its parent (the chain
// closes around it), with paths from that parent (or the hop's source) to each child.
void LlmEngine::FailLoadHop(int inst) {
  const Instance& in = *insts_[inst];
  const int l = in.load;
  if (l < 0 || !loads_[l].mc.has_value()) return;
  Load& load = loads_[l];
  blitz::LayeredMulticast& mc = *load.mc;
  const int hop = in.hop;
  const int parent = mc.parent(hop);
  const blitz::Endpoint from =
      parent >= 0 ? EndpointOf(*insts_[load.hop_instance[parent]]) : load.hop_source[hop];
  const std::vector<int> children = mc.FailHop(*net_, hop, now(), [&](int child) {
    blitz::Endpoint to = EndpointOf(*insts_[load.hop_instance[child]]);
    return blitz::ShardPaths(from, to, *topo_);
  });
  for (const int c : children) load.hop_source[c] = load.hop_source[hop];
  LoadMemberGone(l);
}

void LlmEngine::LoadMemberGone(int l) {
  Load& load = loads_[l];
  if (--load.remaining > 0) return;
  load.mc.reset();
  active_loads_.erase(std::remove(active_loads_.begin(), active_loads_.end(), l),
                      active_loads_.end());
}

bool LlmEngine::EndpointDead(const blitz::Endpoint& e) const {
  if (e.kind != blitz::Endpoint::Kind::kGpuInstance) {
    return dead_mask_[e.node] == all_gpus_mask_;  // the node is gone (host cache, SSD)
  }
  return std::any_of(e.gpus.begin(), e.gpus.end(),
                     [&](int g) { return (dead_mask_[e.node] >> g & 1) != 0; });
}

// The source that reaches `target` fastest among the pool's live sources; else the target
// node's host cache or SSD.
blitz::Endpoint LlmEngine::ReplacementSource(const std::string& model,
                                             const blitz::Endpoint& target) const {
  blitz::Endpoint best;
  double best_bw = 0;
  for (const blitz::Endpoint& s : LiveSources(model)) {
    if (EndpointDead(s)) continue;
    // Sources sending KV count half: the fastest idle NIC first.
    const double bw = blitz::HopBandwidth(s, target, *topo_) * (s.outcast_busy ? 0.5 : 1.0);
    if (bw > best_bw) {
      best = s;
      best_bw = bw;
    }
  }
  if (best_bw > 0) return best;
  best = blitz::Endpoint{};
  best.kind = pool_->HostHas(model, target.node) ? blitz::Endpoint::Kind::kHost
                                                 : blitz::Endpoint::Kind::kSsd;
  best.node = target.node;
  return best;
}

// Root hops whose source died (a serving instance on a dead GPU, a host copy on a dead node)
// continue from the best remaining source; they keep the layers they have.
void LlmEngine::RerouteDeadSources() {
  for (const int l : std::vector<int>(active_loads_)) {
    Load& load = loads_[l];
    blitz::LayeredMulticast& mc = *load.mc;
    for (const int h : std::vector<int>(mc.children(-1))) {
      if (mc.failed(h) || mc.layers_received(h) == mc.num_layers()) continue;
      if (!EndpointDead(load.hop_source[h])) continue;
      const blitz::Endpoint to = EndpointOf(*insts_[load.hop_instance[h]]);
      load.hop_source[h] = ReplacementSource(load.model, to);
      mc.RerouteHop(*net_, h, now(), -1, blitz::ShardPaths(load.hop_source[h], to, *topo_));
    }
  }
}

}  // namespace sluice::sim::llm
