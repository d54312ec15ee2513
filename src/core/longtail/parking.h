// Memory-only idle instances (issue 13 item 4): the quota a parked instance holds. A parked
// instance keeps its GPU memory but no SM share; ClusterState requires request > 0, so a parked
// allocation holds a token share of kParkedShare (0.1 % of the SMs), which placement, the
// allocated-share integral and the cost meter count as (almost) nothing. Shared by the simulator
// (src/sim/engine parks and un-parks) and ParkedPacking. Constants and pure functions only.
#ifndef SLUICE_CORE_LONGTAIL_PARKING_H_
#define SLUICE_CORE_LONGTAIL_PARKING_H_

#include "core/resource/cluster.h"

namespace sluice::core {

inline constexpr double kParkedShare = 1e-3;

// The quota of a parked instance: request = limit = kParkedShare, no time slicing.
inline SmQuota ParkedQuota() { return SmQuota{kParkedShare, kParkedShare, 1.0}; }

// True for a parked allocation's quota (what ParkedQuota() returns).
inline bool IsParked(const SmQuota& q) { return q.limit <= kParkedShare; }

}  // namespace sluice::core

#endif  // SLUICE_CORE_LONGTAIL_PARKING_H_
