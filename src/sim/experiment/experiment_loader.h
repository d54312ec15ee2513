// Experiment loader: turns an experiment YAML file (schema in src/sim/experiment/README.md and
// docs/experiments.md) into a validated SimConfig for the engine. Used by `sluice sim run` and
// tests. Validation is strict: malformed YAML, unknown or duplicate fields, wrong types,
// impossible values, unknown models or policies, and functions that fit no GPU are errors naming
// file, line and field (common::InputError, InvalidArgument). Thread-compatible: stateless apart
// from the policy registry, which must be fully registered before the first call.
#ifndef SLUICE_SIM_EXPERIMENT_EXPERIMENT_LOADER_H_
#define SLUICE_SIM_EXPERIMENT_EXPERIMENT_LOADER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/perf/perf_model.h"
#include "sim/engine/sim_config.h"
#include "sim/experiment/function_profile.h"

namespace sluice::sim {

// A loaded experiment and, in function order, what Dilu's profiler chose for each function whose
// YAML gives no `quota:` (or `quota: profile`).
struct LoadedExperiment {
  SimConfig config;
  std::vector<ProfiledFunction> profiles;
};

// Parses the experiment in `text`. `path` names the file in errors, and its directory resolves
// relative workload paths. `perf` supplies model footprints (default memory_gib), the trials of
// the profiler that picks default SM quotas and batch sizes, and the set of known models.
// Workload files are checked to exist, not read.
absl::StatusOr<LoadedExperiment> ParseExperimentWithProfiles(const std::string& text,
                                                             const std::string& path,
                                                             const core::PerfModel& perf);
// The same without the profiles.
absl::StatusOr<SimConfig> ParseExperiment(const std::string& text, const std::string& path,
                                          const core::PerfModel& perf);
// Same with core::PerfModel::BuiltIn().
absl::StatusOr<SimConfig> ParseExperiment(const std::string& text, const std::string& path);

// Reads `path` and parses it. An unreadable file is InvalidArgument naming the path.
absl::StatusOr<LoadedExperiment> LoadExperimentWithProfiles(const std::string& path,
                                                            const core::PerfModel& perf);
absl::StatusOr<SimConfig> LoadExperiment(const std::string& path, const core::PerfModel& perf);
absl::StatusOr<SimConfig> LoadExperiment(const std::string& path);

// Adds to `perf` the stage models (core::AddPipelineStages) that `config`'s pipeline stage
// functions name and `perf` lacks. The loader does not need them (it takes stage sizes from
// core/perf/pipeline_profile.h); the engine does: call this before RunExperiment.
[[nodiscard]] absl::Status RegisterPipelineModels(const SimConfig& config, core::PerfModel& perf);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_EXPERIMENT_EXPERIMENT_LOADER_H_
