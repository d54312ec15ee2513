// PickMutationVictims: the prefill->decode mutation order shared by the simulator and the
// controller. Pure; thread-compatible.
#include "core/llm/mutation.h"

#include <algorithm>
#include <tuple>

namespace sluice::core::llm {

std::vector<int64_t> PickMutationVictims(std::span<const MutationCandidate> candidates,
                                         int pool_size, int n) {
  const int want = std::min({n, pool_size - 1, static_cast<int>(candidates.size())});
  if (want <= 0)
    return {};
  std::vector<MutationCandidate> order(candidates.begin(), candidates.end());
  auto cheaper = [](const MutationCandidate& a, const MutationCandidate& b) {
    return std::tuple(a.queued_prompt_tokens, a.requests, a.id) <
           std::tuple(b.queued_prompt_tokens, b.requests, b.id);
  };
  std::partial_sort(order.begin(), order.begin() + want, order.end(), cheaper);
  std::vector<int64_t> out;
  out.reserve(want);
  for (int k = 0; k < want; ++k)
    out.push_back(order[k].id);
  return out;
}

}  // namespace sluice::core::llm
