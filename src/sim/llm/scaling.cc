// The LLM engine's scaling: samples and the autoscaler, placement, parameter loads (layer by
// layer on the FlowNetwork), drain and release, prefill -> decode mutation.
#include <algorithm>
#include <bit>

#include "common/status.h"
#include "core/blitz/multicast_plan.h"
#include "sim/llm/engine.h"

namespace sluice::sim::llm {
namespace {
constexpr double kGiB = 1073741824.0;
}  // namespace

void LlmEngine::OnSample() {
  Sample(now());
  if (now() + config_.sample_interval <= end_) {
    env_.RunAt(now() + config_.sample_interval, [this] { OnSample(); });
  }
}

void LlmEngine::Sample(absl::Time t) {
  const double dt = absl::ToDoubleSeconds(config_.sample_interval);
  pool_->Expire(t);
  LlmTimelinePoint p;
  p.t_s = absl::ToDoubleSeconds(t - start_);
  for (int fn = 0; fn < static_cast<int>(fns_.size()); ++fn) {
    Function& f = fns_[fn];
    if (policy_.set.autoscale && f.scaler != nullptr) Autoscale(fn, t);
    p.prefill_tokens_per_s += f.stats.interval_prefill_tokens / dt;
    p.decode_tokens_per_s += f.stats.interval_decode_tokens / dt;
    p.prefill_instances += static_cast<int>(f.serving[0].size() + f.serving[1].size());
    p.decode_instances += static_cast<int>(f.serving[2].size());
    p.loading_instances += f.loading[0] + f.loading[1] + f.loading[2];
    f.stats.interval_prefill_tokens = f.stats.interval_decode_tokens = 0;
    f.stats.interval_prompt_arrivals = 0;
  }
  p.gpus_busy = held_gpus_;
  p.host_cache_gib = static_cast<double>(pool_->TotalHostCacheUsed().count()) / kGiB;
  AdvanceNet();
  double nic_bytes = 0;
  for (int l = 0; l < topo_->num_links(); ++l) {
    if (topo_->link(l).kind != core::net::LinkKind::kNicTx) continue;
    const double b = net_->link_bytes(l);
    nic_bytes += b - prev_nic_bytes_[l];
    prev_nic_bytes_[l] = b;
  }
  p.network_gbps = nic_bytes * 8 / 1e9 / dt;
  host_cache_gib_sum_ += p.host_cache_gib;
  host_cache_gib_peak_ = std::max(host_cache_gib_peak_, p.host_cache_gib);
  ++samples_;
  timeline_.push_back(p);
}

void LlmEngine::Autoscale(int fn, absl::Time t) {
  Function& f = fns_[fn];
  const double dt = absl::ToDoubleSeconds(config_.sample_interval);
  const bool pd = f.config.disaggregated;
  core::llm::LlmLoad load;
  load.now = t;
  int64_t queued = 0;
  for (const int i : f.serving[pd ? 1 : 0]) queued += insts_[i]->batcher->queued_prefill_tokens();
  for (const int seq : f.queued) queued += seqs_[seq].prompt;
  // Queued prompts count as demand to serve within one autoscaler window (not one sample: at
  // 100 ms samples that would read a 1 s backlog as 10x the rate).
  const double window_s = std::max(dt, absl::ToDoubleSeconds(policy_.set.scaler.window));
  load.prefill_tokens_per_s = f.stats.interval_prompt_arrivals / dt + queued / window_s;
  load.decode_tokens_per_s = f.stats.interval_decode_tokens / dt;
  // KV fraction averaged over every instance the autoscaler counts (loading ones hold none), so
  // kv_usage x decode_instances is the KV demand in instances' worth.
  const int kv_role = pd ? 2 : 0;
  double kv_instances = 0;
  for (const int i : f.serving[kv_role]) {
    const Batcher& b = *insts_[i]->batcher;
    kv_instances += static_cast<double>(b.kv_used()) / static_cast<double>(b.kv_capacity());
  }
  const int p_count = static_cast<int>(f.serving[pd ? 1 : 0].size()) + f.loading[pd ? 1 : 0];
  load.prefill_instances = p_count;
  load.decode_instances = pd ? static_cast<int>(f.serving[2].size()) + f.loading[2] : p_count;
  if (load.decode_instances > 0) load.kv_usage = kv_instances / load.decode_instances;
  f.scaler->Observe(load);
  const core::llm::LlmScaleDecision d = f.scaler->Decide(t);
  if (!pd) {
    // Colocated instances do both phases: grow if either phase asks, shrink only if both do.
    const int delta = (d.prefill_delta > 0 || d.decode_delta > 0)
                          ? std::max(d.prefill_delta, d.decode_delta)
                          : ((d.prefill_delta < 0 && d.decode_delta < 0)
                                 ? std::max(d.prefill_delta, d.decode_delta)
                                 : 0);
    ScaleRole(fn, BatchRole::kColocated, delta);
    return;
  }
  if (policy_.set.mutation) Mutate(fn, d.mutate_prefill_to_decode);
  ScaleRole(fn, BatchRole::kDecode, d.decode_delta);
  ScaleRole(fn, BatchRole::kPrefill, d.prefill_delta);
}

void LlmEngine::ScaleRole(int fn, BatchRole role, int delta) {
  if (delta < 0) {
    for (int i = 0; i < -delta; ++i) Drain(fn, role);
    return;
  }
  std::vector<int> placed;
  for (int i = 0; i < delta; ++i) {
    const std::optional<int> inst = Place(fn, role);
    if (!inst.has_value()) break;  // cluster full: retried at the next sample
    placed.push_back(*inst);
    ++fns_[fn].stats.scale_outs;
  }
  if (placed.empty()) return;
  env_.RunAt(now() + config_.instance_start,
             [this, fn, placed = std::move(placed)] { StartLoadOf(fn, placed); });
}

// Best fit: the node with the fewest free GPUs that still holds tp of them (ties: lowest node),
// so NVLink domains fill up and large free nodes stay for large instances.
std::optional<int> LlmEngine::Place(int fn, BatchRole role) {
  Function& f = fns_[fn];
  int best = -1, best_free = 0;
  for (int n = 0; n < static_cast<int>(free_mask_.size()); ++n) {
    const int free = std::popcount(free_mask_[n]);
    if (free >= f.tp && (best < 0 || free < best_free)) {
      best = n;
      best_free = free;
    }
  }
  if (best < 0) return std::nullopt;
  auto in = std::make_unique<Instance>();
  in->id = static_cast<int>(insts_.size());
  in->fn = fn;
  in->node = best;
  in->role = role;
  in->placed_at = now();
  for (int k = 0; k < f.tp; ++k) {
    const int g = std::countr_zero(free_mask_[best]);
    free_mask_[best] &= ~(uint64_t{1} << g);
    in->gpus.push_back(g);
    gpu_owner_[best * config_.cluster.gpus_per_node + g] = in->id;
  }
  BatcherConfig bc;
  bc.role = role;
  bc.kv_capacity_tokens = f.kv_capacity;
  bc.max_batch_tokens = f.config.max_batch_tokens;
  bc.max_decode_batch = f.config.max_decode_batch;
  in->batcher = std::make_unique<Batcher>(*f.model, seqs_, f.stats, bc);
  ++f.loading[RoleIndex(role)];
  const int id = in->id;
  insts_.push_back(std::move(in));
  SetHeld(f.tp);
  return id;
}

core::blitz::Endpoint LlmEngine::EndpointOf(const Instance& in) const {
  core::blitz::Endpoint e;
  e.kind = core::blitz::Endpoint::Kind::kGpuInstance;
  e.node = in.node;
  e.gpus = in.gpus;
  // P/D: prefill instances send KV (outcast), decode instances receive it (incast).
  e.outcast_busy = in.role == BatchRole::kPrefill;
  e.incast_busy = in.role == BatchRole::kDecode;
  return e;
}

void LlmEngine::MarkServing(int inst) {
  Instance& in = *insts_[inst];
  Function& f = fns_[in.fn];
  in.state = InstState::kServing;
  AddServing(inst);
  pool_->AddGpuCopy(f.model->spec().name, inst, EndpointOf(in));
  if (in.role != BatchRole::kDecode) {
    std::deque<int> queued;
    queued.swap(f.queued);
    for (const int seq : queued) Route(seq);
  } else {
    RetryPdPending(in.fn);
  }
  Kick(inst);
}

}  // namespace sluice::sim::llm
