// `sluice sim run` of a `kind: llm_serving` experiment (src/sim/llm_experiment loads and reports,
// src/sim/llm runs): the table or --json summary to `out`, summary.json, summary.csv and
// per-policy timeline CSVs under --out. Called by sim_command.cc's dispatch on the file's kind.
// Not thread-safe (one call at a time per output stream).
#ifndef SLUICE_SIM_CLI_LLM_COMMAND_H_
#define SLUICE_SIM_CLI_LLM_COMMAND_H_

#include <ostream>

#include "absl/status/status.h"

#include "sim/cli/sim_command.h"

namespace sluice::sim {

// Loads options.experiment, applies --seed and --policy, runs every policy and prints. Errors:
// the loader's file:line: field messages, an unknown --policy, --event-log (simulation only).
[[nodiscard]] absl::Status RunLlmServing(const SimRunOptions& options, std::ostream& out);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_CLI_LLM_COMMAND_H_
