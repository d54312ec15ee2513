// Each run gets a fresh PolicySet from the registry (placement policies keep indices over one
// ClusterState) and replays the same, already loaded event list, so runs are independent and the
// output depends only on the file and the seed.
#include "sim/placement/placement_experiment.h"

#include <algorithm>
#include <filesystem>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

#include "common/status.h"
#include "core/registry/policy_registry.h"

namespace sluice::sim {
namespace {

bool FileExists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec) ||
         std::filesystem::is_regular_file(path + ".xz", ec);
}

absl::StatusOr<std::vector<const PlacementPolicyConfig*>> SelectPolicies(
    const PlacementExperimentConfig& config, const std::vector<std::string>& names) {
  std::vector<const PlacementPolicyConfig*> selected;
  for (const std::string& n : names) {
    const bool known =
        std::any_of(config.policies.begin(), config.policies.end(),
                    [&](const PlacementPolicyConfig& p) { return p.label == n || p.name == n; });
    if (!known) {
      std::vector<std::string> labels;
      for (const PlacementPolicyConfig& p : config.policies)
        labels.push_back(p.label);
      return absl::InvalidArgumentError(absl::StrCat("no policy '", n, "' in ", config.file,
                                                     "; available: ", absl::StrJoin(labels, ", ")));
    }
  }
  for (const PlacementPolicyConfig& p : config.policies) {
    const bool wanted =
        names.empty() || std::any_of(names.begin(), names.end(),
                                     [&](const auto& n) { return p.label == n || p.name == n; });
    if (wanted)
      selected.push_back(&p);
  }
  return selected;
}

absl::StatusOr<PlacementRunReport> RunOne(const PlacementExperimentConfig& config,
                                          const PlacementPolicyConfig& p,
                                          const LoadedInstances& list,
                                          const PlacementRunOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<core::PolicySet> set,
                          core::MakePolicySet(p.name, p.params, config.file));
  PlacementRunReport run;
  run.policy = p.label;
  run.registry_name = p.name;
  run.workload = list.name;
  run.synthetic = list.synthetic;
  run.swept_param = p.swept_param;
  run.swept_value = p.swept_value;
  run.events = static_cast<int>(list.events.size());
  SLUICE_ASSIGN_OR_RETURN(run.result, ReplayPlacement(list.events, config.cluster, *set,
                                                      {.keep_timeline = options.keep_timeline}));
  auto w = config.paper_peaks.find(list.name);
  if (w != config.paper_peaks.end()) {
    auto v = w->second.find(p.label);
    if (v != w->second.end())
      run.paper_peak_active_gpus = v->second;
  }
  return run;
}

}  // namespace

absl::StatusOr<LoadedInstances> LoadInstances(const InstanceSource& source, uint64_t seed) {
  LoadedInstances out;
  if (!source.path.empty() && (FileExists(source.path) || !source.synthetic)) {
    out.name = source.name;
    SLUICE_ASSIGN_OR_RETURN(out.events, LoadInstanceList(source.path));
    return out;
  }
  SyntheticInstancesConfig cfg = *source.synthetic;
  if (!source.synthetic_seed_given)
    cfg.seed = seed;
  out.name = source.path.empty() ? source.name : absl::StrCat("synthetic-", cfg.count);
  out.synthetic = true;
  SLUICE_ASSIGN_OR_RETURN(out.events, GenerateSyntheticInstances(cfg));
  return out;
}

absl::StatusOr<PlacementReport> RunPlacementExperiment(const PlacementExperimentConfig& config,
                                                       const PlacementRunOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(std::vector<const PlacementPolicyConfig*> policies,
                          SelectPolicies(config, options.policies));
  PlacementReport report;
  report.experiment = config.experiment;
  report.file = config.file;
  report.seed = options.seed.value_or(config.seed);
  report.nodes = static_cast<int>(config.cluster.nodes.size());
  report.gpus_per_node = config.cluster.nodes.empty() ? 0 : config.cluster.nodes[0].gpu_count;
  report.paper_source = config.paper_source;
  for (const InstanceSource& source : config.instances) {
    SLUICE_ASSIGN_OR_RETURN(const LoadedInstances list, LoadInstances(source, report.seed));
    for (const PlacementPolicyConfig* p : policies) {
      SLUICE_ASSIGN_OR_RETURN(PlacementRunReport run, RunOne(config, *p, list, options));
      report.runs.push_back(std::move(run));
    }
  }
  return report;
}

absl::StatusOr<PlacementReport> RunPlacementExperiment(const std::string& path,
                                                       const PlacementRunOptions& options) {
  SLUICE_ASSIGN_OR_RETURN(const PlacementExperimentConfig config, LoadPlacementExperiment(path));
  return RunPlacementExperiment(config, options);
}

absl::StatusOr<PlacementReport> RunPlacementExperiment(const std::string& path) {
  return RunPlacementExperiment(path, PlacementRunOptions{});
}

}  // namespace sluice::sim
