// The llm_serving branch of `sluice sim run`.
#include "sim/cli/llm_command.h"

#include <utility>
#include <vector>

#include "common/status.h"
#include "sim/llm/llm_sim.h"
#include "sim/llm_experiment/llm_loader.h"
#include "sim/llm_experiment/llm_report.h"

namespace sluice::sim {

absl::Status RunLlmServing(const SimRunOptions& options, std::ostream& out) {
  if (options.event_log) {
    return absl::InvalidArgumentError("--event-log is for kind: simulation experiments only");
  }
  SLUICE_ASSIGN_OR_RETURN(llm::LlmSimConfig config, llm::LoadLlmExperiment(options.experiment));
  if (options.seed.has_value())
    config.seed = *options.seed;
  SLUICE_RETURN_IF_ERROR(llm::SelectLlmPolicies(options.policies, config));
  std::vector<llm::LlmRunResult> runs;
  for (const llm::LlmPolicyConfig& policy : config.policies) {
    // The binary's clock times each run (the simulator reads none): wall_s and events_per_s.
    const absl::Time start = options.wall_clock ? options.wall_clock() : absl::UnixEpoch();
    SLUICE_ASSIGN_OR_RETURN(llm::LlmRunResult r, llm::RunLlmSimulation(config, policy));
    if (options.wall_clock) r.wall_s = absl::ToDoubleSeconds(options.wall_clock() - start);
    runs.push_back(std::move(r));
  }
  if (!options.out_dir.empty()) {
    SLUICE_RETURN_IF_ERROR(llm::WriteLlmOutputDir(options.out_dir, config, runs));
  }
  out << (options.json ? llm::LlmSummaryJsonText(config, runs)
                       : llm::LlmSummaryTable(config, runs));
  out.flush();
  return absl::OkStatus();
}

}  // namespace sluice::sim
