// `sluice load --out DIR`: the run's summary.json (kind "load") and <function>_timeline.csv in
// the layout `sluice sim run --out` uses, so that `sluice sim plot DIR` draws report.html of a
// platform run too (docs/observability.md; scripts/demo). Pure formatting except
// WriteLoadOutputDir. Thread-safe.
#ifndef SLUICE_RUNTIME_LOADGEN_LOAD_OUT_H_
#define SLUICE_RUNTIME_LOADGEN_LOAD_OUT_H_

#include <string>

#include "absl/status/status.h"
#include "runtime/loadgen/report.h"

namespace sluice::runtime {

// {"experiment": "sluice load <function>", "kind": "load", "runs": [{"policy": <function>,
//  "seconds", "sent", "ok", "functions": [{"name", "requests", "p50_ms", "p95_ms", "p99_ms",
//  "svr", "cold_starts"}]}]} (cold_starts omitted when unknown).
std::string LoadSummaryJson(const LoadReport& report);

// t_s, then <function>_instances per function seen in the samples (first-seen order), then
// <function>-<id>_sm_share per instance seen (empty where the instance was absent). One row per
// controller sample.
std::string LoadTimelineCsv(const LoadReport& report);

// Creates DIR and writes summary.json and <function>_timeline.csv. Errors name the path.
[[nodiscard]] absl::Status WriteLoadOutputDir(const std::string& dir, const LoadReport& report);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_LOADGEN_LOAD_OUT_H_
