// Moving replicas from surplus stages to budget-cut ones (see budget_rebalancer.h).
#include "core/quart/budget_rebalancer.h"

#include <algorithm>

namespace sluice::core {
namespace {

// Short: FitTotal cut its increment. Only these take; a donor's own delta falls below its
// `asked` as it gives, which must not make it a taker.
bool WasCut(const RebalanceStage& s) {
  return s.delta < s.asked;
}

double PerNeed(int replicas, int need) {
  return static_cast<double>(replicas) / std::max(1, need);
}

// The donor with the most replicas per needed one, or -1.
int PickDonor(const std::vector<RebalanceStage>& s, const std::vector<int>& delta) {
  int pick = -1;
  double most = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const int after = s[i].held + delta[i];
    if (!s[i].may_give || WasCut(s[i]) || delta[i] > 0 ||
        after <= std::max(s[i].min_replicas, s[i].need)) {
      continue;
    }
    const double ratio = PerNeed(after, s[i].need);
    if (pick < 0 || ratio > most) {
      pick = static_cast<int>(i);
      most = ratio;
    }
  }
  return pick;
}

// The short stage with the fewest replicas per needed one, or -1.
int PickTaker(const std::vector<RebalanceStage>& s, const std::vector<int>& delta) {
  int pick = -1;
  double least = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    if (!WasCut(s[i]) || delta[i] >= s[i].asked)
      continue;
    const double ratio = PerNeed(s[i].held + delta[i], s[i].need);
    if (pick < 0 || ratio < least) {
      pick = static_cast<int>(i);
      least = ratio;
    }
  }
  return pick;
}

}  // namespace

std::vector<int> RebalanceUnderBudget(const std::vector<RebalanceStage>& stages) {
  std::vector<int> delta(stages.size());
  for (size_t i = 0; i < stages.size(); ++i)
    delta[i] = stages[i].delta;
  while (true) {
    const int taker = PickTaker(stages, delta);
    if (taker < 0)
      break;
    const int donor = PickDonor(stages, delta);
    if (donor < 0)
      break;
    --delta[donor];
    ++delta[taker];
  }
  return delta;
}

}  // namespace sluice::core
