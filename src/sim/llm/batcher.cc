// Continuous batching of one LLM instance; see batcher.h for the lazy decode accounting.
#include "sim/llm/batcher.h"

#include <algorithm>

#include "common/status.h"

namespace sluice::sim::llm {
namespace {

bool HeapLater(const auto& a, const auto& b) { return a.key > b.key; }

}  // namespace

Batcher::Batcher(const core::LlmPerfModel& model, std::vector<Seq>& seqs, FunctionStats& stats,
                 BatcherConfig config)
    : model_(model), seqs_(seqs), stats_(stats), config_(config) {
  SLUICE_CHECK(config_.kv_capacity_tokens > 0);
  SLUICE_CHECK(config_.max_batch_tokens > 0 && config_.max_decode_batch > 0);
}

void Batcher::EnqueuePrefill(int seq) {
  Seq& s = seqs_[seq];
  s.state = SeqState::kWaiting;
  queued_prefill_tokens_ += s.prefill_target - s.prefilled;
  waiting_.push_back(seq);
}

bool Batcher::ReserveKv(int64_t tokens) {
  if (kv_used_ + tokens > config_.kv_capacity_tokens) return false;
  kv_used_ += tokens;
  return true;
}

void Batcher::AddDecodeReady(int seq) {
  seqs_[seq].state = SeqState::kDecodeReady;
  decode_ready_.push_back(seq);
}

void Batcher::ReleaseKv(int seq) {
  Seq& s = seqs_[seq];
  kv_used_ -= s.kv;
  s.kv = 0;
}

bool Batcher::idle() const {
  return !busy_ && waiting_.empty() && prefilling_.empty() && decode_ready_.empty() &&
         running_count_ == 0;
}

bool Batcher::Live(const Entry& e) const {
  const Seq& s = seqs_[e.seq];
  return s.epoch == e.epoch && s.state == SeqState::kRunning;
}

void Batcher::Join(int seq) {
  Seq& s = seqs_[seq];
  s.state = SeqState::kRunning;
  s.join_step = step_;
  ++running_count_;
  running_ctx_ += s.kv;
  finish_heap_.push_back({step_ + (s.output - s.tokens), seq, s.epoch});
  std::push_heap(finish_heap_.begin(), finish_heap_.end(), HeapLater<Entry, Entry>);
  order_.push_back({0, seq, s.epoch});
  joiners_.push_back({0, seq, s.epoch});
}

// Recompute preemption (vLLM's default): the newest running sequence gives back its KV and
// re-enters the front of the prefill queue with prompt + generated tokens to recompute.
void Batcher::PreemptNewest() {
  while (!order_.empty() && !Live(order_.back())) order_.pop_back();
  SLUICE_CHECK(!order_.empty());
  const int seq = order_.back().seq;
  order_.pop_back();
  Seq& s = seqs_[seq];
  const int64_t steps = step_ - s.join_step;
  const int64_t kv_now = s.kv + steps;
  kv_used_ -= kv_now;
  running_ctx_ -= kv_now;
  --running_count_;
  if (steps > 0) s.last_token = last_decode_end_;
  s.tokens += static_cast<int32_t>(steps);
  ++s.epoch;
  s.kv = 0;
  s.prefill_target = s.prompt + s.tokens;
  s.prefilled = 0;
  s.state = SeqState::kWaiting;
  queued_prefill_tokens_ += s.prefill_target;
  waiting_.push_front(seq);
  ++preemptions_;
  ++stats_.preemptions;
}

// Sequences already admitted (KV reserved) continue first; then new ones are admitted in FIFO
// order while their whole prefill's KV fits beside the running set's next decode step.
void Batcher::PlanPrefill() {
  int64_t budget = config_.max_batch_tokens;
  const bool decodes = config_.role != BatchRole::kPrefill;
  for (const int seq : prefilling_) {
    if (budget <= 0) return;
    const Seq& s = seqs_[seq];
    const int take = static_cast<int>(std::min<int64_t>(budget, s.prefill_target - s.prefilled));
    chunks_.emplace_back(seq, take);
    budget -= take;
  }
  const int64_t growth = decodes ? running_count_ : 0;
  while (budget > 0 && !waiting_.empty()) {
    const int seq = waiting_.front();
    Seq& s = seqs_[seq];
    if (decodes && running_count_ + static_cast<int>(prefilling_.size()) >=
                       config_.max_decode_batch) {
      return;
    }
    if (kv_used_ + growth + s.prefill_target > config_.kv_capacity_tokens) return;
    waiting_.pop_front();
    kv_used_ += s.prefill_target;
    s.kv = s.prefill_target;
    prefilling_.push_back(seq);
    const int take = static_cast<int>(std::min<int64_t>(budget, s.prefill_target - s.prefilled));
    chunks_.emplace_back(seq, take);
    budget -= take;
  }
}

absl::Duration Batcher::StartIteration() {
  SLUICE_CHECK(!busy_);
  chunks_.clear();
  if (config_.role != BatchRole::kPrefill) {
    while (running_count_ < config_.max_decode_batch && !decode_ready_.empty()) {
      const int seq = decode_ready_.front();
      decode_ready_.pop_front();
      Join(seq);
    }
    while (running_count_ > 0 && kv_used_ + running_count_ > config_.kv_capacity_tokens) {
      PreemptNewest();
    }
  }
  PlanPrefill();
  decode_in_flight_ = running_count_;
  if (chunks_.empty() && decode_in_flight_ == 0) return absl::InfiniteDuration();
  int64_t prefill_tokens = 0;
  for (const auto& [seq, take] : chunks_) prefill_tokens += take;
  busy_ = true;
  return model_.IterationTime(prefill_tokens, static_cast<int>(chunks_.size()), decode_in_flight_,
                              running_ctx_);
}

void Batcher::Complete(int seq, absl::Time now) {
  Seq& s = seqs_[seq];
  s.state = SeqState::kDone;
  s.done = now;
  s.last_token = now;
  finished_.push_back(seq);
}

void Batcher::FinishDecode(absl::Time now) {
  const int n = decode_in_flight_;
  if (n == 0) return;
  ++step_;
  kv_used_ += n;
  running_ctx_ += n;
  stats_.interval_decode_tokens += n;
  int64_t joined = 0;
  for (const Entry& e : joiners_) {
    if (!Live(e)) continue;
    ++joined;
    stats_.AddGap(now - seqs_[e.seq].last_token);
  }
  joiners_.clear();
  if (n > joined) stats_.AddGap(now - last_decode_end_, n - joined);
  last_decode_end_ = now;
  while (!finish_heap_.empty() && finish_heap_.front().key <= step_) {
    std::pop_heap(finish_heap_.begin(), finish_heap_.end(), HeapLater<Entry, Entry>);
    const Entry e = finish_heap_.back();
    finish_heap_.pop_back();
    if (!Live(e)) continue;
    Seq& s = seqs_[e.seq];
    const int64_t kv_now = KvOf(s);
    kv_used_ -= kv_now;
    running_ctx_ -= kv_now;
    --running_count_;
    s.tokens = s.output;
    s.kv = 0;
    Complete(e.seq, now);
  }
  if (running_count_ == 0) order_.clear();
}

void Batcher::FinishPrefill(absl::Time now) {
  for (const auto& [seq, take] : chunks_) {
    seqs_[seq].prefilled += take;
    queued_prefill_tokens_ -= take;
    stats_.interval_prefill_tokens += take;
  }
  size_t keep = 0;
  for (size_t i = 0; i < prefilling_.size(); ++i) {
    const int seq = prefilling_[i];
    if (seqs_[seq].prefilled < seqs_[seq].prefill_target) {
      prefilling_[keep++] = seq;
    } else {
      Prefilled(seq, now);
    }
  }
  prefilling_.resize(keep);
}

void Batcher::Prefilled(int seq, absl::Time now) {
  Seq& s = seqs_[seq];
  if (s.tokens == 0) {
    s.first_token = now;
    stats_.ttft.Add(absl::ToDoubleMilliseconds(now - s.arrival));
  } else {
    stats_.AddGap(now - s.last_token);  // a recomputed sequence's next token
  }
  ++s.tokens;
  s.last_token = now;
  if (s.tokens >= s.output) {
    kv_used_ -= s.kv;
    s.kv = 0;
    Complete(seq, now);
  } else if (config_.role == BatchRole::kPrefill) {
    s.state = SeqState::kTransferring;
    prefilled_.push_back(seq);
  } else if (running_count_ < config_.max_decode_batch) {
    Join(seq);
  } else {
    s.state = SeqState::kDecodeReady;
    decode_ready_.push_back(seq);
  }
}

void Batcher::FinishIteration(absl::Time now) {
  SLUICE_CHECK(busy_);
  busy_ = false;
  prefilled_.clear();
  finished_.clear();
  FinishDecode(now);
  FinishPrefill(now);
  chunks_.clear();
  decode_in_flight_ = 0;
}

std::vector<int> Batcher::TakeUnstarted() {
  std::vector<int> out(waiting_.begin(), waiting_.end());
  waiting_.clear();
  for (const int seq : out) {
    Seq& s = seqs_[seq];
    queued_prefill_tokens_ -= s.prefill_target - s.prefilled;
    s.state = SeqState::kQueued;
  }
  return out;
}

namespace {

// Back to the gateway for recompute: prompt + generated tokens are prefilled again.
void ResetForRecompute(Seq& s) {
  ++s.epoch;
  s.kv = 0;
  s.prefill_target = s.prompt + s.tokens;
  s.prefilled = 0;
  s.instance = -1;
  s.state = SeqState::kQueued;
}

}  // namespace

std::vector<int> Batcher::Abort() {
  std::vector<int> out(waiting_.begin(), waiting_.end());
  out.insert(out.end(), prefilling_.begin(), prefilling_.end());
  out.insert(out.end(), decode_ready_.begin(), decode_ready_.end());
  for (const int seq : out) ResetForRecompute(seqs_[seq]);
  // Running sequences: their decode steps since joining count (the iteration in flight does not).
  for (const Entry& e : order_) {
    if (!Live(e)) continue;
    Seq& s = seqs_[e.seq];
    const int64_t steps = step_ - s.join_step;
    if (steps > 0) s.last_token = last_decode_end_;
    s.tokens += static_cast<int32_t>(steps);
    ResetForRecompute(s);
    out.push_back(e.seq);
  }
  waiting_.clear();
  prefilling_.clear();
  decode_ready_.clear();
  finish_heap_.clear();
  order_.clear();
  joiners_.clear();
  chunks_.clear();
  running_count_ = 0;
  running_ctx_ = 0;
  kv_used_ = 0;
  queued_prefill_tokens_ = 0;
  decode_in_flight_ = 0;
  busy_ = false;
  return out;
}

}  // namespace sluice::sim::llm
