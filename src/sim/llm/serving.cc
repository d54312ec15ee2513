// The LLM engine's request path: arrivals, routing, iterations, P/D KV transfers, completion.
#include <algorithm>
#include <random>

#include "common/status.h"
#include "sim/llm/engine.h"

namespace sluice::sim::llm {

void LlmEngine::ScheduleArrival(int fn) {
  Function& f = fns_[fn];
  std::optional<Arrival> a = f.source->Next();
  if (!a.has_value() || a->at >= end_) return;
  env_.RunAt(a->at, [this, fn, a = *a] {
    OnArrival(fn, a);
    for (int k = BurstCopies(fn, a.at); k > 0; --k) OnArrival(fn, a);
    ScheduleArrival(fn);
  });
}

// Bursts multiply the arrival rate by m(t) (ramping linearly from 1 to factor over `ramp`, then
// held): each arrival brings floor(m - 1) copies plus one more with probability frac(m - 1).
int LlmEngine::BurstCopies(int fn, absl::Time t) {
  double m = 1;
  for (const BurstConfig& b : config_.bursts) {
    if (b.function != fns_[fn].config.name) continue;
    const absl::Time at = start_ + b.at;
    if (t < at || t >= at + b.ramp + b.hold) continue;
    const double ramp = b.ramp <= absl::ZeroDuration()
                            ? 1.0
                            : std::min(1.0, absl::FDivDuration(t - at, b.ramp));
    m = std::max(m, 1 + (b.factor - 1) * ramp);
  }
  const double extra = m - 1;
  if (extra <= 0) return 0;
  const int whole = static_cast<int>(extra);
  return whole + (std::uniform_real_distribution<double>(0, 1)(burst_rng_) < extra - whole ? 1 : 0);
}

void LlmEngine::OnArrival(int fn, const Arrival& a) {
  Function& f = fns_[fn];
  Seq s;
  s.fn = fn;
  s.arrival = now();
  s.prompt = a.prompt_tokens > 0 ? a.prompt_tokens : f.config.default_prompt_tokens;
  s.output = std::max(1, a.output_tokens > 0 ? a.output_tokens : f.config.default_output_tokens);
  s.prefill_target = s.prompt;
  ++f.stats.requests;
  f.stats.interval_prompt_arrivals += s.prompt;
  const int id = static_cast<int>(seqs_.size());
  // The whole sequence must fit one instance's KV cache, or it could never finish.
  if (static_cast<int64_t>(s.prompt) + s.output > f.kv_capacity) {
    s.state = SeqState::kRejected;
    ++f.stats.rejected;
    seqs_.push_back(s);
    return;
  }
  seqs_.push_back(s);
  Route(id);
}

// Prefill-capable instance with the fewest queued prefill tokens (ties: lowest id). A live
// target is skipped: its pair's source takes the work.
int LlmEngine::PickPrefill(int fn) const {
  const Function& f = fns_[fn];
  const int role = RoleIndex(f.config.disaggregated ? BatchRole::kPrefill : BatchRole::kColocated);
  int best = -1;
  int64_t best_load = 0;
  for (const int i : f.serving[role]) {
    const Instance& in = *insts_[i];
    // Colocated: outstanding work is queued prompt tokens plus KV in use (KV-aware).
    const int64_t load = in.batcher->queued_prefill_tokens() +
                         (f.config.disaggregated ? 0 : in.batcher->kv_used() / 8);
    if (best < 0 || load < best_load) {
      best = i;
      best_load = load;
    }
  }
  return best;
}

// Decode instance that fits `kv` tokens with the fewest KV transfers landing on it (spreads the
// incast over decode NICs), then the most free KV (KV-aware); -1 when none fits.
int LlmEngine::PickDecode(int fn, int64_t kv) const {
  const Function& f = fns_[fn];
  int best = -1;
  int best_incoming = 0;
  int64_t best_free = -1;
  for (const int i : f.serving[RoleIndex(BatchRole::kDecode)]) {
    const Instance& in = *insts_[i];
    const int64_t free = in.batcher->kv_capacity() - in.batcher->kv_used();
    if (free < kv) continue;
    if (best < 0 || in.incoming < best_incoming ||
        (in.incoming == best_incoming && free > best_free)) {
      best = i;
      best_incoming = in.incoming;
      best_free = free;
    }
  }
  return best;
}

void LlmEngine::Route(int seq) {
  Seq& s = seqs_[seq];
  const int inst = PickPrefill(s.fn);
  if (inst < 0) {
    s.state = SeqState::kQueued;
    fns_[s.fn].queued.push_back(seq);
    return;
  }
  s.instance = inst;
  insts_[inst]->batcher->EnqueuePrefill(seq);
  Kick(inst);
}

void LlmEngine::Kick(int inst) {
  Instance& in = *insts_[inst];
  if (in.state != InstState::kServing && in.state != InstState::kDraining) return;
  if (in.batcher->busy()) return;
  absl::Duration d = in.batcher->StartIteration();
  if (d == absl::InfiniteDuration()) {
    if (in.state == InstState::kDraining) MaybeRelease(inst);
    return;
  }
  max_kv_overflow_ =
      std::max(max_kv_overflow_, in.batcher->kv_used() - in.batcher->kv_capacity());
  if (in.pair >= 0 && !in.live_target) d = LiveIterationTime(inst, d);
  in.iter_timer = env_.RunAt(now() + d, [this, inst] { OnIterationEnd(inst); });
}

void LlmEngine::OnIterationEnd(int inst) {
  Instance& in = *insts_[inst];
  in.iter_timer = 0;
  in.batcher->FinishIteration(now());
  max_kv_overflow_ =
      std::max(max_kv_overflow_, in.batcher->kv_used() - in.batcher->kv_capacity());
  // Copies: the handlers below may start other instances' iterations.
  const std::vector<int> prefilled = in.batcher->prefilled();
  const std::vector<int> finished = in.batcher->finished();
  for (const int seq : finished) OnFinished(seq);
  for (const int seq : prefilled) {
    fns_[in.fn].pd_pending.push_back(seq);
  }
  if (!prefilled.empty() || (!finished.empty() && !fns_[in.fn].pd_pending.empty())) {
    RetryPdPending(in.fn);
  }
  Kick(inst);
}

void LlmEngine::OnFinished(int seq) {
  Seq& s = seqs_[seq];
  Function& f = fns_[s.fn];
  ++f.stats.completed;
  const bool ttft_ok = s.first_token - s.arrival <= f.config.ttft_slo;
  const bool tbt_ok =
      s.output <= 1 || (s.done - s.first_token) / (s.output - 1) <= f.config.tbt_slo;
  if (ttft_ok && tbt_ok) ++f.stats.slo_met;
}

// P/D: each prefilled sequence (FIFO) gets a decode instance with room for its KV; the transfer
// then runs as one flow per tensor-parallel shard (GPU i -> GPU i).
void LlmEngine::RetryPdPending(int fn) {
  Function& f = fns_[fn];
  while (!f.pd_pending.empty()) {
    const int seq = f.pd_pending.front();
    Seq& s = seqs_[seq];
    const int64_t kv = s.kv;
    const int d = PickDecode(fn, kv);
    if (d < 0) return;
    f.pd_pending.pop_front();
    SLUICE_CHECK(insts_[d]->batcher->ReserveKv(kv));
    s.decode_instance = d;
    ++insts_[d]->incoming;
    StartKvTransfer(seq);
  }
}

void LlmEngine::StartKvTransfer(int seq) {
  Seq& s = seqs_[seq];
  const Function& f = fns_[s.fn];
  const Instance& src = *insts_[s.instance];
  const Instance& dst = *insts_[s.decode_instance];
  const int64_t bytes = s.kv * f.model->spec().kv_bytes_per_token.count() / f.tp;
  if (s.instance == s.decode_instance || bytes <= 0) {
    env_.Post([this, seq] { OnKvLanded(seq); });  // mutated instance decoding its own prefill
    s.pending_flows = 0;
    return;
  }
  AdvanceNet();
  s.pending_flows = f.tp;
  for (int i = 0; i < f.tp; ++i) {
    const core::net::Path path = topo_->GpuToGpu({src.node, src.gpus[i]}, {dst.node, dst.gpus[i]});
    const core::net::FlowId id = net_->Start(now(), path, bytes);
    kv_flows_[id] = seq;
  }
  ScheduleNet();
}

void LlmEngine::OnKvLanded(int seq) {
  Seq& s = seqs_[seq];
  if (insts_[s.decode_instance]->state == InstState::kFailed) {
    // A mutated instance's own hand-off (posted, no flows) when it died meanwhile.
    --insts_[s.decode_instance]->incoming;
    Requeue(seq);
    return;
  }
  Instance& src = *insts_[s.instance];
  const int64_t kv = s.kv;
  src.batcher->ReleaseKv(seq);  // the decode side reserved its own copy (ReserveKv)
  s.kv = kv;
  const int d = s.decode_instance;
  --insts_[d]->incoming;
  s.instance = d;
  insts_[d]->batcher->AddDecodeReady(seq);
  Kick(d);
  if (src.id != d) {
    RetryPdPending(src.fn);
    Kick(src.id);
  }
}

}  // namespace sluice::sim::llm
