// Continuous batching and KV-cache accounting of one LLM serving instance (src/sim/llm): which
// prefill chunks and decode steps the next iteration runs, how long it takes (core::LlmPerfModel),
// and what it produced. Decode steps are counted lazily (a running sequence's tokens and KV are
// "as of join + steps since"), so an iteration costs O(prefill chunks + sequences finishing), not
// O(running sequences). The engine owns timing (it schedules the iteration's end); this class
// holds no clock. Not thread-safe.
#ifndef SLUICE_SIM_LLM_BATCHER_H_
#define SLUICE_SIM_LLM_BATCHER_H_

#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "absl/time/time.h"
#include "core/perf/llm_perf_model.h"
#include "sim/llm/llm_metrics.h"
#include "sim/llm/sequence.h"

namespace sluice::sim::llm {

// What a batcher's instance does: prefill only (P/D prefill), decode only (P/D decode; it still
// recomputes preempted sequences), or both in mixed iterations (colocated).
enum class BatchRole { kColocated, kPrefill, kDecode };

struct BatcherConfig {
  BatchRole role = BatchRole::kColocated;
  int64_t kv_capacity_tokens = 0;  // > 0
  int max_batch_tokens = 4096;     // prefill tokens per iteration
  int max_decode_batch = 256;      // running sequences (decoded each iteration)
};

class Batcher {
 public:
  // `model`, `seqs` and `stats` are borrowed and outlive the batcher; `seqs` may grow.
  Batcher(const core::LlmPerfModel& model, std::vector<Seq>& seqs, FunctionStats& stats,
          BatcherConfig config);

  // A new (or re-routed) sequence joins the prefill queue.
  void EnqueuePrefill(int seq);
  // P/D: the decode side reserves `tokens` of KV for a sequence whose KV is about to arrive.
  // False (nothing reserved) when it does not fit.
  bool ReserveKv(int64_t tokens);
  // P/D: a sequence's KV (reserved with ReserveKv) landed; it decodes once a running slot frees.
  void AddDecodeReady(int seq);
  // P/D prefill side: the sequence's KV left this instance.
  void ReleaseKv(int seq);

  // Forms the next iteration (admission, preemption, chunking) and returns its duration, or
  // nullopt-like InfiniteDuration when there is nothing to run. Requires !busy().
  absl::Duration StartIteration();
  // Applies the iteration started last at `now`: prefill chunks, one decode step. Afterwards
  // prefilled() lists sequences whose prefill completed (P/D prefill role: they now wait for a
  // KV transfer; other roles: they joined the running set or finished) and finished() those
  // that completed at `now`.
  void FinishIteration(absl::Time now);
  const std::vector<int>& prefilled() const { return prefilled_; }
  const std::vector<int>& finished() const { return finished_; }

  // Removes and returns queued sequences that have not started (no KV reserved), for re-routing
  // when the instance drains or changes role.
  std::vector<int> TakeUnstarted();
  // P/D decode side: gives back a reservation whose KV will not arrive (its sender died).
  void UnreserveKv(int64_t tokens) { kv_used_ -= tokens; }
  // The instance died: drops the iteration in flight and returns every sequence it holds
  // (waiting, prefilling, decode-ready, running; queue order, then join order), each reset for
  // recompute (KV freed, prompt + generated tokens to prefill again) in state kQueued. Sequences
  // already handed out by prefilled() (P/D, waiting for a KV transfer) are the engine's. The
  // batcher is empty afterwards.
  std::vector<int> Abort();
  // Changes role in place (prefill -> decode mutation); parameters and KV stay.
  void set_role(BatchRole role) { config_.role = role; }

  bool busy() const { return busy_; }
  bool idle() const;  // not busy and holds no sequence at all
  BatchRole role() const { return config_.role; }
  int64_t kv_capacity() const { return config_.kv_capacity_tokens; }
  int64_t kv_used() const { return kv_used_; }
  int running() const { return running_count_; }
  int64_t queued_prefill_tokens() const { return queued_prefill_tokens_; }
  size_t waiting() const { return waiting_.size() + prefilling_.size(); }
  int64_t preemptions() const { return preemptions_; }
  // Current KV of a running sequence (its join-time KV plus the decode steps since).
  int64_t KvOf(const Seq& s) const { return s.kv + (step_ - s.join_step); }

 private:
  struct Entry {
    int64_t key;  // finish step (heap) or join order (order)
    int seq;
    uint32_t epoch;
  };
  void Join(int seq);
  void PreemptNewest();
  void Complete(int seq, absl::Time now);
  void PlanPrefill();
  void FinishDecode(absl::Time now);
  void FinishPrefill(absl::Time now);
  void Prefilled(int seq, absl::Time now);
  bool Live(const Entry& e) const;

  const core::LlmPerfModel& model_;
  std::vector<Seq>& seqs_;
  FunctionStats& stats_;
  BatcherConfig config_;

  int64_t kv_used_ = 0;
  int64_t queued_prefill_tokens_ = 0;  // prompt tokens still to prefill in waiting_
  std::deque<int> waiting_;            // not admitted yet (no KV), FIFO
  std::vector<int> prefilling_;        // admitted (KV reserved), prefill in progress
  std::deque<int> decode_ready_;
  std::vector<Entry> finish_heap_;     // min-heap on finish step
  std::vector<Entry> order_;           // running sequences in join order (lazy deletion)
  std::vector<Entry> joiners_;         // joined since the last decode step
  int running_count_ = 0;
  int64_t running_ctx_ = 0;            // KV tokens of running sequences
  int64_t step_ = 0;                   // decode steps run
  absl::Time last_decode_end_ = absl::InfinitePast();
  int64_t preemptions_ = 0;

  bool busy_ = false;
  std::vector<std::pair<int, int>> chunks_;  // (seq, tokens) of the iteration in flight
  int decode_in_flight_ = 0;
  std::vector<int> prefilled_, finished_;
};

}  // namespace sluice::sim::llm

#endif  // SLUICE_SIM_LLM_BATCHER_H_
