// Runs every (workload variant x policy) pair of a loaded experiment through the engine
// (sim::RunSimulation), in file order: variants outer, policies inner. Used by `sluice sim run`
// and the end-to-end tests. Thread-compatible: each call owns its state.
#ifndef SLUICE_SIM_EXPERIMENT_EXPERIMENT_RUNNER_H_
#define SLUICE_SIM_EXPERIMENT_EXPERIMENT_RUNNER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/perf/perf_model.h"
#include "sim/engine/sim_config.h"

namespace sluice::sim {

struct ExperimentOutput {
  std::vector<RunResult> runs;
  // The engine's event log of each run, parallel to `runs`; empty unless requested.
  std::vector<std::string> event_logs;
};

// Runs the experiment. `config_file` names the YAML file in engine errors. The first failing
// run's error is returned (no partial output). With `config.report_theory_mm1` the engine fills
// each function's theory_mean_ms (the loader has checked that each function is an M/M/1 queue).
absl::StatusOr<ExperimentOutput> RunExperiment(const SimConfig& config,
                                               const core::PerfModel& perf,
                                               const std::string& config_file,
                                               bool keep_event_logs);

// Keeps only the policies whose label or registry name is in `names` (all when `names` is
// empty), in file order. InvalidArgument naming the unmatched name and the available labels.
[[nodiscard]] absl::Status SelectPolicies(const std::vector<std::string>& names,
                                          SimConfig& config);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_EXPERIMENT_EXPERIMENT_RUNNER_H_
