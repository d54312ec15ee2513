// Pieces of the experiment loader split by section of the YAML file: cluster (cluster_loader.cc),
// functions (function_loader.cc), the profiler and SM quotas (quota_loader.cc). Internal to
// src/sim/experiment; experiment_loader.cc drives them. Stateless; not thread-safe only in that
// yaml-cpp nodes are not.
#ifndef SLUICE_SIM_EXPERIMENT_LOADER_INTERNAL_H_
#define SLUICE_SIM_EXPERIMENT_LOADER_INTERNAL_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

#include "core/dilu/profiler.h"
#include "core/perf/perf_model.h"
#include "core/resource/cluster.h"
#include "sim/engine/sim_config.h"
#include "sim/experiment/function_profile.h"
#include "sim/experiment/yaml_fields.h"
#include "sim/workload/workload_spec.h"
#include "yaml-cpp/yaml.h"

namespace sluice::sim::internal {

// What parsing one section needs besides its node.
struct LoadContext {
  const std::string& file;      // the experiment file, for errors
  std::string base_dir;         // its directory, for relative workload paths
  const core::PerfModel& perf;
  const core::ClusterSpec& cluster;  // already parsed (functions are checked against it)
  const core::Profiler& profiler;    // from `profiler:`; quotas of functions without `quota:`
};

// A parsed `functions[i]` and, when its quota came from the profiler, what the profiler chose.
struct ParsedFunction {
  FunctionConfig config;
  std::optional<FunctionProfile> profile;
};

// A parsed `cluster:`: the nodes, and the price of one GPU of each node for an hour (US dollars;
// `gpu_price_per_hour`, else the GPU preset's price, else 0), in node order.
struct ParsedCluster {
  core::ClusterSpec spec;
  std::vector<double> gpu_price_per_hour;
};

// `cluster:` (flat form or `node_groups:`). Errors name file, line and field.
absl::StatusOr<ParsedCluster> ParseCluster(const YAML::Node& node, const std::string& file);

// `functions[index]`. Resolves defaults from the perf model (memory, kind) and the profiler (SM
// quota, batch, capacity) and checks that the function fits the cluster.
absl::StatusOr<ParsedFunction> ParseFunction(const YAML::Node& node, int index,
                                             const LoadContext& ctx);

// A `workload:` node via sim::ParseWorkloadSpec (which also checks that a file it names exists,
// as given or with ".xz"); error messages get the full field path (`field` is the node's path).
absl::StatusOr<WorkloadSpec> ParseWorkload(const YAML::Node& node, absl::string_view field,
                                           const LoadContext& ctx);

// The optional top-level `profiler:` block (README.md); absent = the paper's defaults.
absl::StatusOr<core::Profiler> ParseProfiler(const StrictMap& top);

// Sections shared by plain functions and pipeline functions (pipeline_loader.cc): `batching:`,
// `instances:` and an explicit `quota: {request, limit, time_quota}` of the map `f`.
[[nodiscard]] absl::Status ParseBatching(const StrictMap& f, FunctionConfig& fc);
[[nodiscard]] absl::Status ParseInstances(const StrictMap& f, FunctionConfig& fc);
[[nodiscard]] absl::Status ParseExplicitQuota(const StrictMap& f, FunctionConfig& fc);

// A `functions[index]` entry with `pipeline:` (pipeline_loader.cc): the stage functions
// "<name>/s<i>" in order and the PipelineConfig. The stage models need not be in ctx.perf
// (RegisterPipelineModels adds them before a run).
struct ParsedPipeline {
  std::vector<FunctionConfig> stages;
  PipelineConfig pipeline;
};
absl::StatusOr<ParsedPipeline> ParsePipelineFunction(const YAML::Node& node, int index,
                                                     const LoadContext& ctx);

// The optional top-level `network:` block: `preset` (core::net::NetPreset) and any field
// core::net::SetNetSpecField knows, validated by core::net::ValidateNetSpec.
absl::StatusOr<std::optional<core::net::ClusterNetSpec>> ParseNetwork(const StrictMap& top);

// The function's SM quota: `quota: {request, limit}` as given, or (no `quota:`, or
// `quota: profile`) Dilu's profiler on the perf model, which also sets max_batch (unless
// `batching.max_batch` was given: then the search keeps that batch) and capacity_rps (unless
// given). A profile
// that fails is an error at the function's `slo_ms` (training: `model`). Call after the serving
// or training sections have been parsed.
absl::StatusOr<std::optional<FunctionProfile>> ResolveQuota(const StrictMap& f,
                                                           const core::ModelEntry& model,
                                                           const LoadContext& ctx,
                                                           FunctionConfig& fc);

}  // namespace sluice::sim::internal

#endif  // SLUICE_SIM_EXPERIMENT_LOADER_INTERNAL_H_
