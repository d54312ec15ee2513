// Scale-out arbitration (scale_out.h).
#include "core/serving/scale_out.h"

#include <algorithm>
#include <utility>

namespace sluice::core {

ScaleOutOrder::ScaleOutOrder(std::vector<ScaleOutNeed> needs)
    : needs_(std::move(needs)), granted_(needs_.size(), 0) {}

int ScaleOutOrder::Next() const {
  int best = -1;
  double best_need = 0;
  for (size_t j = 0; j < needs_.size(); ++j) {
    const ScaleOutNeed& n = needs_[j];
    if (n.want <= 0)
      continue;
    const double need = n.waiting / std::max(1.0, static_cast<double>(n.deployed));
    if (best < 0 || need > best_need ||
        (need == best_need && granted_[j] < granted_[static_cast<size_t>(best)])) {
      best = static_cast<int>(j);
      best_need = need;
    }
  }
  return best;
}

void ScaleOutOrder::Granted(int j) {
  ScaleOutNeed& n = needs_[static_cast<size_t>(j)];
  --n.want;
  ++n.deployed;
  ++granted_[static_cast<size_t>(j)];
}

void ScaleOutOrder::Refused(int j) { needs_[static_cast<size_t>(j)].want = 0; }

}  // namespace sluice::core
