// `slo_sweep:` parsing and each function's base latency (see slo_sweep.h).
#include "sim/experiment/slo_sweep.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "common/status.h"

namespace sluice::sim::internal {

absl::StatusOr<std::vector<double>> ParseSloSweep(const StrictMap& top) {
  SLUICE_ASSIGN_OR_RETURN(StrictMap m, StrictMap::Create(top.Get("slo_sweep"), top.file(),
                                                         top.FieldOf("slo_sweep"),
                                                         {"from", "to", "step"}));
  SLUICE_ASSIGN_OR_RETURN(const double from, m.Double("from", Range::kPositive, 1.0));
  SLUICE_ASSIGN_OR_RETURN(const double to, m.Double("to", Range::kPositive, 10.0));
  SLUICE_ASSIGN_OR_RETURN(const double step, m.Double("step", Range::kPositive, 0.25));
  if (to < from) return m.ErrorAt("to", absl::StrCat("must be >= from (", from, "), got ", to));
  const double n = std::floor((to - from) / step + 1e-9) + 1;
  if (n > 1000) {
    return m.ErrorAt("step", absl::StrCat("gives ", n, " multipliers; at most 1000"));
  }
  std::vector<double> out;
  for (int i = 0; i < static_cast<int>(n); ++i) out.push_back(from + step * i);
  return out;
}

absl::Status ApplySloSweep(const StrictMap& top, const core::PerfModel& perf,
                           SimConfig& config) {
  if (!top.Has("slo_sweep")) return absl::OkStatus();
  SLUICE_ASSIGN_OR_RETURN(std::vector<double> multipliers, ParseSloSweep(top));
  for (FunctionConfig& f : config.functions) {
    if (f.kind != FunctionKind::kInference || f.exponential_service_mean) continue;
    absl::StatusOr<const core::ModelEntry*> entry = perf.Find(f.model);
    if (!entry.ok()) continue;  // the function loader has already reported unknown models
    f.slo_sweep_base_ms = absl::ToDoubleMilliseconds((*entry)->latency->BatchLatency(1, 1, 1));
    f.slo_sweep_multipliers = multipliers;
  }
  return absl::OkStatus();
}

}  // namespace sluice::sim::internal
