// RebalanceUnderBudget: QuartScaler's optional step (QuartConfig::rebalance, off by default,
// not in the paper) that moves replicas between stages when the pipeline is at R_total: stages
// holding more than they need give replicas, bypassing the smoother's hold, to the stages short
// of theirs (whose increments FitTotal cut, or below their share of R_total). docs/quart.md,
// "Rebalancing under the budget". Pure function; no state, thread-compatible.
#ifndef SLUICE_CORE_QUART_BUDGET_REBALANCER_H_
#define SLUICE_CORE_QUART_BUDGET_REBALANCER_H_

#include <vector>

namespace sluice::core {

// One stage as the rebalancer sees it, after FitTotal.
struct RebalanceStage {
  int held = 0;          // ready + starting GPU replicas (>= 0)
  int delta = 0;         // the decision's replica delta after FitTotal
  int asked = 0;         // the delta wanted (>= delta): asked - delta is what the stage is short
  int min_replicas = 1;  // never drained below this
  int need = 1;          // replicas the stage needs at its load, with the caller's headroom
  bool may_give = true;  // false: never a donor (over target, queueing, or scaled up lately)
};

// The deltas after moving replicas, one per stage. A stage is short by asked - delta; a donor
// has may_give, is not short, has delta <= 0 and held + delta > max(min_replicas, need). Each move drains one
// replica of the donor holding the most per needed replica (ties: the lower index) and adds one
// to the short stage holding the fewest per needed replica (ties: the lower index), until no
// stage is short or none can give. Moves keep the total: sum(held + delta) never grows, no
// stage goes below min_replicas, and no stage gets more than it asked.
std::vector<int> RebalanceUnderBudget(const std::vector<RebalanceStage>& stages);

}  // namespace sluice::core

#endif  // SLUICE_CORE_QUART_BUDGET_REBALANCER_H_
