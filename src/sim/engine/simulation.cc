// RunSimulation: builds the policy from the registry and runs one Engine.
#include "sim/engine/simulation.h"

#include <utility>

#include "common/status.h"
#include "core/registry/policy_registry.h"
#include "sim/engine/engine.h"

namespace sluice::sim {

absl::StatusOr<RunResult> RunSimulation(const SimConfig& config, const PolicyConfig& policy,
                                        const WorkloadVariant& workload,
                                        const core::PerfModel& perf, std::string_view config_file,
                                        TimelineSink* event_log) {
  SLUICE_ASSIGN_OR_RETURN(
      std::unique_ptr<core::PolicySet> set,
      core::MakePolicySet(policy.name, policy.params, std::string(config_file)));
  std::string label = policy.label.empty() ? policy.name : policy.label;
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine,
                          Engine::Create(config, std::move(set), std::move(label), workload, perf,
                                         config_file, event_log));
  return engine->Run();
}

}  // namespace sluice::sim
