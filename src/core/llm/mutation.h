// Prefill->decode mutation victims (BlitzScale §5, P/D disaggregation): which prefill instances
// become decode instances when the LLM autoscaler asks for `mutate_prefill_to_decode`. One rule
// for both worlds: the simulator's LlmEngine (src/sim/llm) and the controller's P/D pools
// (src/runtime/controller/llm_pools.cc) both call PickMutationVictims. Pure; thread-compatible.
#ifndef SLUICE_CORE_LLM_MUTATION_H_
#define SLUICE_CORE_LLM_MUTATION_H_

#include <cstdint>
#include <span>
#include <vector>

namespace sluice::core::llm {

// A prefill instance that could switch to decode now (ready, not already switching, not paired
// to a live-scaling partner). The caller filters eligibility; this file only orders.
struct MutationCandidate {
  int64_t id = 0;                    // caller's instance id; smaller = started earlier
  int64_t queued_prompt_tokens = 0;  // prompt tokens still to prefill (waiting requests)
  int requests = 0;                  // running + waiting requests
};

// Up to `n` ids to mutate, leaving at least one prefill instance in a pool of `pool_size`
// (every prefill instance of the function, eligible or not): at most min(n, pool_size - 1,
// candidates.size()). Cheapest to switch first: fewest queued prompt tokens (their prefill
// must be re-routed), then fewest requests, then the oldest instance (smallest id), so the
// choice is deterministic. The tie-break matters: on blitzscale-azure-code.yaml, newest-first
// raised TBT p99 from 257 to 1,244 ms (3 mutations in the run; measured, cause not analysed).
// n <= 0 or pool_size <= 1: none.
std::vector<int64_t> PickMutationVictims(std::span<const MutationCandidate> candidates,
                                         int pool_size, int n);

}  // namespace sluice::core::llm

#endif  // SLUICE_CORE_LLM_MUTATION_H_
