// Section parsers of the `kind: llm_serving` loader: the cluster (llm_cluster_loader.cc) and one
// function (llm_function_loader.cc). Internal to src/sim/llm_experiment; llm_loader.cc drives
// them. Stateless; not thread-safe only in that yaml-cpp nodes are not.
#ifndef SLUICE_SIM_LLM_EXPERIMENT_LLM_LOADER_INTERNAL_H_
#define SLUICE_SIM_LLM_EXPERIMENT_LLM_LOADER_INTERNAL_H_

#include <string>

#include "absl/status/statusor.h"

#include "core/net/topology.h"
#include "sim/llm/llm_sim.h"
#include "yaml-cpp/yaml.h"

namespace sluice::sim::llm::internal {

// What parsing a function needs besides its node.
struct LlmLoadContext {
  const std::string& file;                   // the experiment file, for errors
  std::string base_dir;                      // its directory, for relative workload paths
  const std::string& gpu;                    // perf-model GPU (top-level `gpu:`)
  const core::net::ClusterNetSpec& cluster;  // already parsed
};

// `cluster:`: `preset` (core::net::NetPreset, optional) with `nodes` and every ClusterNetSpec
// field as an override (`gpu_memory_gib`, `host_memory_per_node_gib` for the Bytes fields), then
// core::net::ValidateNetSpec. Errors name file:line: field.
absl::StatusOr<core::net::ClusterNetSpec> ParseLlmCluster(const YAML::Node& node,
                                                          const std::string& file);

// `functions[index]`: model checked with core::BuiltinLlmModel(model, gpu, tp), SLOs defaulting
// to BlitzScale's by model size (DefaultSlos), initial pools checked against the cluster.
absl::StatusOr<LlmFunctionConfig> ParseLlmFunction(const YAML::Node& node, int index,
                                                   const LlmLoadContext& ctx);

// BlitzScale's SLOs (§3): 1250 / 200 ms for 70B models, 450 / 150 ms otherwise (7B, 8B).
struct SloDefaults {
  double ttft_ms = 450;
  double tbt_ms = 150;
};
SloDefaults DefaultSlos(const std::string& model);

}  // namespace sluice::sim::llm::internal

#endif  // SLUICE_SIM_LLM_EXPERIMENT_LLM_LOADER_INTERNAL_H_
