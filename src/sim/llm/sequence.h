// One LLM request as the token-level simulator tracks it (src/sim/llm): token counts, prefill
// progress, the KV it holds and the timestamps TTFT and TBT come from. Owned by the engine in one
// vector indexed by sequence id; batchers refer to sequences by id. Value type; not thread-safe.
#ifndef SLUICE_SIM_LLM_SEQUENCE_H_
#define SLUICE_SIM_LLM_SEQUENCE_H_

#include <cstdint>

#include "absl/time/time.h"

namespace sluice::sim::llm {

// Request states:
//   kQueued (at the function's gateway: no serving instance of the role)
//     -> kWaiting (in an instance's prefill queue; its KV is reserved once its first chunk runs)
//     -> kTransferring (P/D: prefilled on a prefill instance, KV flowing to a decode instance)
//     -> kDecodeReady (KV on the decode instance, waiting for a running slot)
//     -> kRunning (decoding one token per iteration)
//     -> kDone
//   kRunning -> kWaiting (preempted: KV freed, prompt + generated tokens recomputed)
//   kWaiting -> kQueued (its instance drained or mutated before the sequence started)
//   kWaiting -> kDone (the prefill's token was the last one)
//   (arrival) -> kRejected (prompt + output longer than an instance's KV capacity)
enum class SeqState { kQueued, kWaiting, kTransferring, kDecodeReady, kRunning, kDone, kRejected };

struct Seq {
  int32_t fn = 0;
  int32_t prompt = 0;
  int32_t output = 1;  // tokens to generate (the first comes from the prefill), >= 1
  SeqState state = SeqState::kQueued;
  absl::Time arrival;
  absl::Time first_token = absl::InfiniteFuture();
  absl::Time last_token = absl::InfinitePast();
  absl::Time done = absl::InfiniteFuture();
  // Generated tokens; while kRunning, as of join_step (the batcher adds its decode steps since).
  int32_t tokens = 0;
  int32_t prefill_target = 0;  // tokens to prefill: the prompt, or prompt + tokens after preemption
  int32_t prefilled = 0;
  // KV tokens held on its instance; while kRunning, as of join_step. 0 = nothing reserved.
  int64_t kv = 0;
  int64_t join_step = 0;       // the batcher's decode step when it joined the running set
  uint32_t epoch = 0;          // bumped on preemption: stale heap / order entries are skipped
  int32_t instance = -1;       // instance holding its KV (prefill side while kTransferring)
  int32_t decode_instance = -1;  // P/D: the decode instance its KV is flowing to
  int32_t pending_flows = 0;     // P/D: KV shard flows still in flight
};

}  // namespace sluice::sim::llm

#endif  // SLUICE_SIM_LLM_SEQUENCE_H_
