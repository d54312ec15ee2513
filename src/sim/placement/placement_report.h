// Output formats of placement-replay experiments: the human table (policy, peak GPUs beside the
// published peak, mean GPUs, Dilu's SM / memory fragmentation), the JSON summary and per-run CSV
// timelines. Pure formatting of a PlacementReport; stateless and thread-safe.
//
// JSON (keys in this order; extra keys may be added later):
//   {"experiment", "seed", "kind": "placement_replay", "cluster": {"nodes", "gpus_per_node"},
//    "paper_source", "runs": [{"policy", "workload", "synthetic", "peak_active_gpus",
//    "paper_peak_active_gpus" (null when the file gives none), "mean_active_gpus",
//    "final_active_gpus", "sm_fragmentation", "mem_fragmentation", "sm_fragmentation_at_peak",
//    "mem_fragmentation_at_peak", "sm_unrequested", "sm_unrequested_at_peak", "failed_placements",
//    "first_failure" (only when > 0), "registry_name", "sensitivity": {"param", "value"}
//    (sensitivity runs only), "events", "starts", "deletes", "span_s", "peak_at_s",
//    "max_gpu_request_sum", "max_gpu_limit_sum"}]}
// Fragmentation and means are rounded to 6 decimals so that the text is stable.
#ifndef SLUICE_SIM_PLACEMENT_PLACEMENT_REPORT_H_
#define SLUICE_SIM_PLACEMENT_PLACEMENT_REPORT_H_

#include <ostream>
#include <string>

#include "nlohmann/json.hpp"
#include "sim/placement/placement_experiment.h"

namespace sluice::sim {

nlohmann::ordered_json PlacementReportJson(const PlacementReport& report);
// PlacementReportJson pretty-printed (2-space indent) with a trailing newline.
std::string PlacementReportJsonText(const PlacementReport& report);

// Header, then one row per run: workload, policy, peak, paper peak and our difference from it,
// mean, final, SM and memory fragmentation (time-weighted), SM unrequested share, SM and memory
// fragmentation at the peak, failed placements.
void PrintPlacementReport(const PlacementReport& report, std::ostream& out);
std::string PlacementReportTable(const PlacementReport& report);

// t_s,active_gpus,sm_fragmentation,mem_fragmentation,sm_unrequested (one row per timeline point;
// empty body unless the run kept its timeline).
std::string PlacementTimelineCsv(const PlacementRunReport& run);
// "<policy>_<workload>_timeline.csv".
std::string PlacementTimelineFileName(const PlacementRunReport& run);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_PLACEMENT_PLACEMENT_REPORT_H_
