// Helpers shared by zigzag.cc and zigzag_ilp.cc; not part of the contract. Pure.
#ifndef SLUICE_CORE_LLM_ZIGZAG_INTERNAL_H_
#define SLUICE_CORE_LLM_ZIGZAG_INTERNAL_H_

#include <string>
#include <vector>

#include "core/llm/zigzag.h"

namespace sluice::core::llm::internal {

// A plan for `x` with its finish times and mean from SimulateZigzag.
ZigzagPlan Judge(const ZigzagInput& in, std::vector<int> x, std::string method, bool optimal);
// The best-effort assignment (PlanBestEffort's x). Precondition: valid input.
std::vector<int> BestEffortLayers(const ZigzagInput& in);
// First-improvement local search on x (steps of +-1, +-2 per batch) under SimulateZigzag's total
// finish time; the ILP's starting incumbent.
std::vector<int> LocalSearch(const ZigzagInput& in, std::vector<int> x);

}  // namespace sluice::core::llm::internal

#endif  // SLUICE_CORE_LLM_ZIGZAG_INTERNAL_H_
