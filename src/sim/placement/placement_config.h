// The `kind: placement_replay` experiment file (Dilu §5.5 style: instance start/delete lists
// replayed onto a cluster, placement only): its validated form and the strict loader. Schema in
// src/sim/placement/README.md. Used by RunPlacementExperiment and tests. Errors are
// InvalidArgument "FILE:LINE: field 'PATH': message" (common::InputError). Thread-compatible:
// stateless apart from the policy registry, which must be fully registered before the first call.
#ifndef SLUICE_SIM_PLACEMENT_PLACEMENT_CONFIG_H_
#define SLUICE_SIM_PLACEMENT_PLACEMENT_CONFIG_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

#include "core/policy/policy_params.h"
#include "core/resource/cluster.h"
#include "sim/placement/synthetic_instances.h"

namespace sluice::sim {

// One instance list to replay (a workload variant). `path` is tried first; when it is empty or
// the file (or `path.xz`) does not exist, `synthetic` is generated instead; with neither usable
// the run fails with NotFound naming the path.
struct InstanceSource {
  // Workload name: explicit `name:`, else the file's stem ("instances-3200"), else
  // "synthetic-<count>". A run that falls back from `path` to `synthetic` is named
  // "synthetic-<count>" whatever this says, so that published numbers for the file are not
  // printed beside a generated list.
  std::string name;
  std::string path;  // resolved against the experiment file's directory; may be empty
  std::optional<SyntheticInstancesConfig> synthetic;  // seed: its own, else the experiment's
  bool synthetic_seed_given = false;
};

struct PlacementPolicyConfig {
  std::string name;   // registry name
  std::string label;  // unique among runs; defaults to name
  std::vector<core::PolicyParam> params;
  // Set on the runs that the sensitivity sweep adds: the swept param and its value as written.
  std::string swept_param;
  std::string swept_value;
};

struct PlacementExperimentConfig {
  std::string file;  // the experiment file, for messages
  std::string experiment;
  std::string description;
  uint64_t seed = 1;
  core::ClusterSpec cluster;
  std::vector<InstanceSource> instances;
  // The listed policies, then one entry per sensitivity value (label "<base>-<param>-<value>").
  std::vector<PlacementPolicyConfig> policies;
  std::string paper_source;
  // Published peak active GPUs: workload name -> policy label -> value.
  std::map<std::string, std::map<std::string, double>> paper_peaks;
};

// Parses `text` (the contents of `path`). Validated here: every key at every level (unknown,
// duplicate, empty, wrong type), `kind` must be placement_replay, cluster sizes, instance
// sources (a path or synthetic or both; a path that does not exist needs synthetic), policy names
// and params (built once through core::MakePolicySet), unique labels, the sensitivity sweep
// (its policy must be a listed label, its param must be accepted by that policy for every
// value) and the paper block (workloads and labels must name ones of this file).
absl::StatusOr<PlacementExperimentConfig> ParsePlacementExperiment(const std::string& text,
                                                                   const std::string& path);
// Reads `path` and parses it; an unreadable file is InvalidArgument naming the path.
absl::StatusOr<PlacementExperimentConfig> LoadPlacementExperiment(const std::string& path);

// The top-level `kind:` of the YAML file at `path` ("" when absent), for dispatch by
// `sluice sim run`. InvalidArgument for an unreadable file or malformed YAML.
absl::StatusOr<std::string> ReadExperimentKind(const std::string& path);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_PLACEMENT_PLACEMENT_CONFIG_H_
