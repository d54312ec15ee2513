// The LLM engine's scale-in (drain, then release GPUs and the pool's copy) and BlitzScale's
// prefill -> decode mutation.
#include <algorithm>

#include "common/status.h"
#include "core/llm/mutation.h"
#include "sim/llm/engine.h"

namespace sluice::sim::llm {

// Drains the least-loaded serving instance of `role` (newest among equals), never the last one
// nor one in a live pair.
void LlmEngine::Drain(int fn, BatchRole role) {
  Function& f = fns_[fn];
  const std::vector<int>& pool = f.serving[RoleIndex(role)];
  if (pool.size() <= 1) return;
  int best = -1;
  int64_t best_load = 0;
  for (const int i : pool) {
    const Instance& in = *insts_[i];
    if (in.pair >= 0) continue;
    const int64_t load = in.batcher->queued_prefill_tokens() + in.batcher->kv_used();
    if (best < 0 || load <= best_load) {
      best = i;
      best_load = load;
    }
  }
  if (best < 0) return;
  Instance& in = *insts_[best];
  RemoveServing(best);
  in.state = InstState::kDraining;
  ++f.stats.scale_ins;
  for (const int seq : in.batcher->TakeUnstarted()) Route(seq);
  Kick(best);
  MaybeRelease(best);
}

void LlmEngine::MaybeRelease(int inst) {
  Instance& in = *insts_[inst];
  if (in.state != InstState::kDraining || !in.batcher->idle() || in.batcher->kv_used() > 0) return;
  Release(inst);
}

void LlmEngine::Release(int inst) {
  Instance& in = *insts_[inst];
  Function& f = fns_[in.fn];
  in.state = InstState::kGone;
  for (const int g : in.gpus) {
    free_mask_[in.node] |= uint64_t{1} << g;
    gpu_owner_[in.node * config_.cluster.gpus_per_node + g] = -1;
  }
  pool_->RemoveGpuCopy(f.model->spec().name, inst, now());
  SetHeld(-f.tp);
}

// A serving prefill instance (the least loaded, not in a live pair, not the last one) becomes a
// decode instance at once: it keeps its parameters (no load) and its KV; its unstarted prompts
// go back to the router and prompts in flight finish prefill and decode here.
// Switches up to `n` prefill instances to decode, chosen by core::llm::PickMutationVictims (the
// controller's P/D pools use the same rule); instances in a live pair are not candidates.
void LlmEngine::Mutate(int fn, int n) {
  Function& f = fns_[fn];
  const std::vector<int>& pool = f.serving[RoleIndex(BatchRole::kPrefill)];
  std::vector<core::llm::MutationCandidate> candidates;
  for (const int i : pool) {
    const Instance& in = *insts_[i];
    if (in.pair >= 0) continue;
    candidates.push_back({i, in.batcher->queued_prefill_tokens(),
                          in.batcher->running() + static_cast<int>(in.batcher->waiting())});
  }
  const std::vector<int64_t> victims =
      core::llm::PickMutationVictims(candidates, static_cast<int>(pool.size()), n);
  for (const int64_t id : victims) {
    const int best = static_cast<int>(id);
    Instance& in = *insts_[best];
    RemoveServing(best);
    in.role = BatchRole::kDecode;
    in.batcher->set_role(BatchRole::kDecode);
    AddServing(best);
    ++f.stats.mutations;
    for (const int seq : in.batcher->TakeUnstarted()) Route(seq);
    Kick(best);
  }
  if (!victims.empty()) RetryPdPending(fn);
}

}  // namespace sluice::sim::llm
