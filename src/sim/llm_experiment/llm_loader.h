// Loader of `kind: llm_serving` experiment files (schema: README.md and docs/experiments.md,
// "llm_serving"): YAML -> a validated sim::llm::LlmSimConfig for the token-level LLM simulator
// (src/sim/llm). Used by `sluice sim run` (src/sim/cli/llm_command.cc) and tests. Strict like
// src/sim/experiment: malformed YAML, unknown or duplicate keys, wrong types, out-of-range values,
// unknown presets / models / policies / parameters, functions that do not fit the cluster and
// bursts naming no function are InvalidArgument "file:line: field 'a.b': message".
// Thread-compatible: stateless.
#ifndef SLUICE_SIM_LLM_EXPERIMENT_LLM_LOADER_H_
#define SLUICE_SIM_LLM_EXPERIMENT_LLM_LOADER_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#include "sim/llm/llm_sim.h"

namespace sluice::sim::llm {

// Parses the experiment in `text`; `path` names the file in errors and its directory resolves
// relative workload paths (which must exist; they are not read here).
absl::StatusOr<LlmSimConfig> ParseLlmExperiment(const std::string& text, const std::string& path);
// Reads `path` and parses it. An unreadable file is InvalidArgument naming the path.
absl::StatusOr<LlmSimConfig> LoadLlmExperiment(const std::string& path);

// Keeps only the policies whose label or set name is in `wanted` (empty = all), in file order.
// InvalidArgument naming an entry of `wanted` that matches none.
[[nodiscard]] absl::Status SelectLlmPolicies(const std::vector<std::string>& wanted,
                                             LlmSimConfig& config);

}  // namespace sluice::sim::llm

#endif  // SLUICE_SIM_LLM_EXPERIMENT_LLM_LOADER_H_
