// The llm_serving branch of `sluice sim run`.
#include "sim/cli/llm_command.h"

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
  SLUICE_ASSIGN_OR_RETURN(const std::vector<llm::LlmRunResult> runs, llm::RunLlmExperiment(config));
  if (!options.out_dir.empty()) {
    SLUICE_RETURN_IF_ERROR(llm::WriteLlmOutputDir(options.out_dir, config, runs));
  }
  out << (options.json ? llm::LlmSummaryJsonText(config, runs)
                       : llm::LlmSummaryTable(config, runs));
  out.flush();
  return absl::OkStatus();
}

}  // namespace sluice::sim
