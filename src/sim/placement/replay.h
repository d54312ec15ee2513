// Placement replay: applies instance start/delete events in time order to a ClusterState through
// one policy set's placement and quota rule, and measures active GPUs and Dilu's SM / memory
// fragmentation over time. No requests, tokens or scaling: this is the experiment of Dilu's
// §5.5 / Fig. 20 ("placement only"). Used by the placement experiment and its benchmark.
// Stateless function; thread-compatible (the PolicySet is the caller's and is mutated).
#ifndef SLUICE_SIM_PLACEMENT_REPLAY_H_
#define SLUICE_SIM_PLACEMENT_REPLAY_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

#include "core/registry/policy_registry.h"
#include "core/resource/cluster.h"
#include "sim/placement/instance_list.h"

namespace sluice::sim {

// The cluster after all events at one timestamp.
struct TimelinePoint {
  absl::Duration at;  // since the first event
  int active_gpus = 0;
  double sm_fragmentation = 0;   // core::MeasureDilu(...).sm()
  double mem_fragmentation = 0;  // core::MeasureDilu(...).memory()
  double sm_unrequested = 0;     // see ReplayResult::sm_unrequested
};

struct ReplayResult {
  int starts = 0;
  int deletes = 0;            // deletes applied (deletes of failed starts are not counted)
  int failed_placements = 0;  // starts the policy could not place (ResourceExhausted)
  std::string first_failure;  // "line N: <service>: <message>" of the first one, if any
  absl::Duration span;        // last event time - first event time

  // Active GPUs (hosting at least one instance). The peak is taken after every event, as Dilu's
  // simulator does; the mean weights each state by how long it lasted over `span` (equal to the
  // final state's value when span is zero).
  int peak_active_gpus = 0;
  absl::Duration peak_at;
  double mean_active_gpus = 0;
  int final_active_gpus = 0;

  // Dilu's fragmentation (core/resource/fragmentation.h: mean unused SM request share and free
  // memory share over active GPUs): time-weighted means, and the values right after the event
  // that first reached the peak.
  double sm_fragmentation = 0;
  double mem_fragmentation = 0;
  double sm_fragmentation_at_peak = 0;
  double mem_fragmentation_at_peak = 0;
  // The same SM measure over what the instances asked for rather than what the policy granted:
  // mean over active GPUs of 1 - min(1, sum of the profiled SM requests of the instances there).
  // Equal to sm_fragmentation for request-based quotas (dilu, *-r); larger for exclusive (a whole
  // GPU granted, fragmentation 0 by the books) and *-l. Dilu's simulator reports this for its
  // Exclusive baseline and the granted measure for the others.
  double sm_unrequested = 0;
  double sm_unrequested_at_peak = 0;

  // Largest summed SM request / limit on one GPU at any time (checks Omega and gamma caps).
  double max_gpu_request_sum = 0;
  double max_gpu_limit_sum = 0;

  std::vector<TimelinePoint> timeline;  // one point per distinct timestamp, when requested
};

struct ReplayOptions {
  bool keep_timeline = false;
};

// Replays `events` onto a fresh ClusterState of `cluster`. Every start becomes an InstanceDemand:
// function = one FunctionId per service_name, kind from the list, gpus = gpu_num, memory per GPU,
// same_node for training (Dilu's simulator puts a training job's workers on one node), and the
// quota policy.QuotaFor({profiled = <sm_request, sm_limit>}) (exclusive {1,1}, *-l {limit,limit},
// *-r {request,request}, dilu <request, limit>). Commits go through ClusterState::Add followed by
// OnAdded; deletes through ClusterState::Remove followed by OnRemoved.
// Preconditions on `events` (OrderAndCheckEvents): sorted by time, no start of a live name, no
// delete of a name that is not live; violations are InvalidArgument. A policy error other than
// ResourceExhausted, a quota outside 0 < request <= limit <= 1, or a placement that ClusterState
// rejects (or that splits a training job across nodes, or returns the wrong number of GPUs) is
// returned as an error.
absl::StatusOr<ReplayResult> ReplayPlacement(const std::vector<PlacementEvent>& events,
                                             const core::ClusterSpec& cluster,
                                             core::PolicySet& policy,
                                             const ReplayOptions& options = {});

}  // namespace sluice::sim

#endif  // SLUICE_SIM_PLACEMENT_REPLAY_H_
