// Pieces of the experiment loader split by section of the YAML file: cluster (cluster_loader.cc)
// and functions (function_loader.cc). Internal to src/sim/experiment; experiment_loader.cc drives
// them. Stateless; not thread-safe only in that yaml-cpp nodes are not.
#ifndef SLUICE_SIM_EXPERIMENT_LOADER_INTERNAL_H_
#define SLUICE_SIM_EXPERIMENT_LOADER_INTERNAL_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/perf/perf_model.h"
#include "core/resource/cluster.h"
#include "sim/engine/sim_config.h"
#include "sim/workload/workload_spec.h"
#include "yaml-cpp/yaml.h"

namespace sluice::sim::internal {

// What parsing one section needs besides its node.
struct LoadContext {
  const std::string& file;      // the experiment file, for errors
  std::string base_dir;         // its directory, for relative workload paths
  const core::PerfModel& perf;
  const core::ClusterSpec& cluster;  // already parsed (functions are checked against it)
};

// `cluster:` (flat form or `node_groups:`). Errors name file, line and field.
absl::StatusOr<core::ClusterSpec> ParseCluster(const YAML::Node& node, const std::string& file);

// `functions[index]`. Resolves defaults from the perf model (memory, SM quota, kind) and checks
// that the function fits the cluster.
absl::StatusOr<FunctionConfig> ParseFunction(const YAML::Node& node, int index,
                                             const LoadContext& ctx);

// A `workload:` node via sim::ParseWorkloadSpec (which also checks that a file it names exists,
// as given or with ".xz"); error messages get the full field path (`field` is the node's path).
absl::StatusOr<WorkloadSpec> ParseWorkload(const YAML::Node& node, absl::string_view field,
                                           const LoadContext& ctx);

// Default SM quota of a function whose YAML gives none (rule in README.md): limit is the smallest
// share (in steps of 1/20) whose latency is within 10 % of the full GPU's; request is the
// smallest share that meets half the SLO (inference) or half the full-GPU speed (training),
// capped at limit.
core::SmQuota DeriveQuota(const core::LatencyModel& latency, const FunctionConfig& f);

}  // namespace sluice::sim::internal

#endif  // SLUICE_SIM_EXPERIMENT_LOADER_INTERNAL_H_
