// Which of several functions that all want more instances gets the next one when they compete
// for the same GPUs: the scale-out arbitration of a pipeline's stages (QUART, issue 11), shared
// by the simulator's engine and the runtime controller so both grant replicas in one order.
// Thread-compatible: a value type, no shared state.
#ifndef SLUICE_CORE_SERVING_SCALE_OUT_H_
#define SLUICE_CORE_SERVING_SCALE_OUT_H_

#include <cstddef>
#include <vector>

namespace sluice::core {

// One contender: its backlog, its instances now (starting ones count) and how many more it wants.
struct ScaleOutNeed {
  double waiting = 0;  // requests queued for it
  int deployed = 0;    // instances placed, ready or starting
  int want = 0;        // more instances wanted in this decision (<= 0: none)
};

// The grant loop, one instance at a time:
//   for (int j = order.Next(); j >= 0; j = order.Next())
//     placed(j) ? order.Granted(j) : order.Refused(j);
// Next picks, among contenders still short (want > 0), the most requests waiting per deployed
// instance (at least 1), then the fewest granted so far in this round, then the lower index.
// Granted counts the new instance as deployed; Refused (no room) drops the contender for the
// round. When there is room for everything, everyone gets what it asked for; when there is not,
// the most congested contenders get the instances, whatever their index. Terminates: every call
// of Granted or Refused lowers the total still wanted.
class ScaleOutOrder {
 public:
  explicit ScaleOutOrder(std::vector<ScaleOutNeed> needs);

  // The contender to try next; -1 when none is short.
  [[nodiscard]] int Next() const;
  // `j` (a value Next returned) got one instance.
  void Granted(int j);
  // `j` could not be placed: it gets nothing more this round.
  void Refused(int j);

  [[nodiscard]] int granted(int j) const { return granted_[static_cast<size_t>(j)]; }

 private:
  std::vector<ScaleOutNeed> needs_;
  std::vector<int> granted_;
};

}  // namespace sluice::core

#endif  // SLUICE_CORE_SERVING_SCALE_OUT_H_
