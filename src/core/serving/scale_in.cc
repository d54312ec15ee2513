// Scale-in order (scale_in.h).
#include "core/serving/scale_in.h"

#include <algorithm>
#include <tuple>

namespace sluice::core {

std::vector<int64_t> PickScaleIn(std::vector<ScaleInCandidate> candidates, int count) {
  std::sort(candidates.begin(), candidates.end(),
            [](const ScaleInCandidate& a, const ScaleInCandidate& b) {
              return std::make_tuple(a.ready, a.in_flight, -a.id) <
                     std::make_tuple(b.ready, b.in_flight, -b.id);
            });
  std::vector<int64_t> ids;
  for (int i = 0; i < count && i < static_cast<int>(candidates.size()); ++i) {
    ids.push_back(candidates[i].id);
  }
  return ids;
}

}  // namespace sluice::core
