// The run loop of an experiment and policy selection.
#include "sim/experiment/experiment_runner.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "sim/engine/simulation.h"

namespace sluice::sim {

absl::StatusOr<ExperimentOutput> RunExperiment(const SimConfig& config,
                                               const core::PerfModel& perf,
                                               const std::string& config_file,
                                               bool keep_event_logs) {
  std::vector<WorkloadVariant> variants = config.workloads;
  if (variants.empty()) variants.emplace_back();  // "default": every function's own workload
  ExperimentOutput out;
  for (const WorkloadVariant& variant : variants) {
    for (const PolicyConfig& policy : config.policies) {
      StringTimelineSink log;
      SLUICE_ASSIGN_OR_RETURN(
          RunResult run, RunSimulation(config, policy, variant, perf, config_file,
                                       keep_event_logs ? &log : nullptr));
      out.runs.push_back(std::move(run));
      if (keep_event_logs) out.event_logs.push_back(log.text());
    }
  }
  return out;
}

absl::Status SelectPolicies(const std::vector<std::string>& names, SimConfig& config) {
  if (names.empty()) return absl::OkStatus();
  std::vector<std::string> labels;
  for (const PolicyConfig& p : config.policies) labels.push_back(p.label);
  std::vector<PolicyConfig> kept;
  for (const std::string& name : names) {
    bool found = false;
    for (const PolicyConfig& p : config.policies) {
      if (p.label == name || p.name == name) found = true;
    }
    if (!found) {
      return absl::InvalidArgumentError(absl::StrCat("--policy '", name, "': not in the experiment",
                                                     " (have: ", absl::StrJoin(labels, ", "), ")"));
    }
  }
  for (const PolicyConfig& p : config.policies) {
    for (const std::string& name : names) {
      if (p.label == name || p.name == name) {
        kept.push_back(p);
        break;
      }
    }
  }
  config.policies = std::move(kept);
  return absl::OkStatus();
}

}  // namespace sluice::sim
