// Entry point of `kind: placement_replay` experiments (Dilu §5.5, Fig. 20): loads the file, gets
// each instance list (the file, or the synthetic generator as a fallback), replays it under every
// policy (and every sensitivity value) and reports peak / mean active GPUs and Dilu's
// fragmentation beside the published numbers. Used by `sluice sim run` (dispatch on `kind`), the
// benchmark and tests. Output in placement_report.h. Thread-compatible; the policy registry must
// be fully registered before the first call.
#ifndef SLUICE_SIM_PLACEMENT_PLACEMENT_EXPERIMENT_H_
#define SLUICE_SIM_PLACEMENT_PLACEMENT_EXPERIMENT_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "sim/placement/placement_config.h"
#include "sim/placement/replay.h"

namespace sluice::sim {

struct PlacementRunReport {
  std::string policy;  // label
  std::string registry_name;
  std::string workload;     // instance list name ("instances-3200", "synthetic-3200")
  bool synthetic = false;   // the list was generated
  std::string swept_param;  // set on sensitivity runs
  std::string swept_value;
  int events = 0;
  ReplayResult result;
  std::optional<double> paper_peak_active_gpus;  // from the file's paper block
};

struct PlacementReport {
  std::string experiment;
  std::string file;
  uint64_t seed = 1;
  int nodes = 0;
  int gpus_per_node = 0;
  std::string paper_source;
  std::vector<PlacementRunReport> runs;  // workloads outer, policies inner, in file order
};

struct PlacementRunOptions {
  std::optional<uint64_t> seed;       // replaces the file's seed (synthetic lists without one)
  std::vector<std::string> policies;  // run only these labels or registry names; empty = all
  bool keep_timeline = false;         // fill ReplayResult::timeline
};

// Runs a loaded experiment. Errors: NotFound when an instance list is missing and has no
// synthetic fallback, InvalidArgument for a malformed list (file:line:field) or an unknown name in
// options.policies, and whatever ReplayPlacement returns for a misbehaving policy.
absl::StatusOr<PlacementReport> RunPlacementExperiment(const PlacementExperimentConfig& config,
                                                       const PlacementRunOptions& options);
// LoadPlacementExperiment(path) then the above.
absl::StatusOr<PlacementReport> RunPlacementExperiment(const std::string& path,
                                                       const PlacementRunOptions& options);
absl::StatusOr<PlacementReport> RunPlacementExperiment(const std::string& path);

// The events of one source (the list at its path if present, else its synthetic fallback), with
// the name the run reports and whether it was generated. `seed` is used when the source's
// synthetic block gives none.
struct LoadedInstances {
  std::string name;
  bool synthetic = false;
  std::vector<PlacementEvent> events;
};
absl::StatusOr<LoadedInstances> LoadInstances(const InstanceSource& source, uint64_t seed);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_PLACEMENT_PLACEMENT_EXPERIMENT_H_
