// Top level of the experiment file: run settings, cold starts, the profiler, policies, workload
// variants and
// the cross-section checks (duplicate names, the M/M/1 validation preconditions). yaml-cpp
// throws; every exception is caught here and turned into an InputError with its line.
#include "sim/experiment/experiment_loader.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"
#include "core/perf/pipeline_profile.h"
#include "core/registry/policy_registry.h"
#include "sim/experiment/function_group.h"
#include "sim/experiment/loader_internal.h"
#include "sim/experiment/slo_sweep.h"
#include "sim/experiment/yaml_fields.h"

namespace sluice::sim {
namespace {

using internal::LoadContext;

absl::Status ParseColdStart(const StrictMap& top, ColdStartConfig& cs) {
  if (!top.Has("cold_start")) return absl::OkStatus();
  SLUICE_ASSIGN_OR_RETURN(StrictMap m, StrictMap::Create(top.Get("cold_start"), top.file(),
                                                         "cold_start",
                                                         {"container_start_s", "host_cache",
                                                          "pool_handoff_ms"}));
  SLUICE_ASSIGN_OR_RETURN(double start, m.Double("container_start_s", Range::kNonNegative,
                                                 absl::ToDoubleSeconds(cs.container_start)));
  cs.container_start = absl::Seconds(start);
  SLUICE_ASSIGN_OR_RETURN(cs.host_cache, m.Bool("host_cache", cs.host_cache));
  SLUICE_ASSIGN_OR_RETURN(double handoff, m.Double("pool_handoff_ms", Range::kNonNegative,
                                                   absl::ToDoubleMilliseconds(cs.pool_handoff)));
  cs.pool_handoff = absl::Milliseconds(handoff);
  return absl::OkStatus();
}

// `fluid: {min_mean_rps: R[, generate_below_rps: G][, batch_samples: K][, draw_thread: B]}`
// turns the approximate fluid mode on (sim_config.h: FluidConfig).
absl::Status ParseFluid(const StrictMap& top, FluidConfig& fluid) {
  if (!top.Has("fluid")) return absl::OkStatus();
  SLUICE_ASSIGN_OR_RETURN(StrictMap m, StrictMap::Create(top.Get("fluid"), top.file(), "fluid",
                                                         {"min_mean_rps",
                                                          "generate_below_rps",
                                                          "batch_samples", "draw_thread"}));
  if (!m.Has("min_mean_rps")) return m.ErrorAt("min_mean_rps", "required field is missing");
  SLUICE_ASSIGN_OR_RETURN(fluid.min_mean_rps,
                          m.Double("min_mean_rps", Range::kPositive, fluid.min_mean_rps));
  SLUICE_ASSIGN_OR_RETURN(fluid.generate_below_rps,
                          m.Double("generate_below_rps", Range::kNonNegative,
                                   fluid.generate_below_rps));
  SLUICE_ASSIGN_OR_RETURN(const int64_t batch,
                          m.Int("batch_samples", Range::kPositive, fluid.batch_samples));
  if (batch > 3600) return m.ErrorAt("batch_samples", "must be at most 3600");
  fluid.batch_samples = static_cast<int>(batch);
  SLUICE_ASSIGN_OR_RETURN(fluid.draw_thread, m.Bool("draw_thread", fluid.draw_thread));
  fluid.enabled = true;
  return absl::OkStatus();
}

// The keys of a policy map: name, label, and everything else as the policy's own params.
absl::Status ReadPolicyMap(const YAML::Node& node, const std::string& field,
                           const std::string& file, PolicyConfig& p, YAML::Node& name_node) {
  for (const auto& kv : node) {
    if (!kv.first.IsScalar()) return YamlError(file, kv.first, field, "keys must be plain names");
    const std::string key = kv.first.Scalar();
    const std::string kfield = JoinField(field, key);
    if (!kv.second.IsScalar() || kv.second.Scalar().empty()) {
      return YamlError(file, kv.second, kfield, "must be a single non-empty value");
    }
    bool seen = (key == "name" && !p.name.empty()) || (key == "label" && !p.label.empty());
    for (const core::PolicyParam& q : p.params) seen = seen || q.key == key;
    if (seen) return YamlError(file, kv.first, kfield, "duplicate field");
    if (key == "name") {
      p.name = kv.second.Scalar();
      // reset(), not operator=: assigning a Node rewrites the node it refers to, which here is
      // the map being iterated (yaml-cpp semantics) and corrupts it.
      name_node.reset(kv.second);
    } else if (key == "label") {
      p.label = kv.second.Scalar();
    } else {
      p.params.push_back({key, kv.second.Scalar(), YamlLine(kv.second)});
    }
  }
  return absl::OkStatus();
}

// A policy entry: `name` or {name, label, <param>: <value>...}; the registry checks the params.
absl::StatusOr<PolicyConfig> ParsePolicy(const YAML::Node& node, const std::string& field,
                                         const std::string& file) {
  PolicyConfig p;
  YAML::Node name_node = node;
  if (node.IsScalar()) p.name = node.Scalar();
  if (node.IsMap()) SLUICE_RETURN_IF_ERROR(ReadPolicyMap(node, field, file, p, name_node));
  if (p.name.empty()) {
    return YamlError(file, node, JoinField(field, "name"),
                     "a policy is a name or a map with a name: field");
  }
  const std::vector<std::string> known = core::KnownPolicies();
  if (std::find(known.begin(), known.end(), p.name) == known.end()) {
    return YamlError(file, name_node, JoinField(field, "name"),
                     absl::StrCat("unknown policy '", p.name, "' (known: ",
                                  absl::StrJoin(known, ", "), ")"));
  }
  // Built once here so that bad params fail at load time, naming their line.
  SLUICE_RETURN_IF_ERROR(core::MakePolicySet(p.name, p.params, file).status());
  if (p.label.empty()) p.label = p.name;
  if (!IsValidName(p.label)) {
    return YamlError(file, node, JoinField(field, "label"),
                     absl::StrCat("'", p.label, "' is not a valid name (1-64 characters of ",
                                  "A-Z a-z 0-9 . _ - +, starting with a letter or digit)"));
  }
  return p;
}

absl::StatusOr<std::vector<PolicyConfig>> ParsePolicies(const StrictMap& top) {
  return ParseLabelledPolicies<PolicyConfig>(top, ParsePolicy);
}

// Fills `out.config.functions` and, for profiled quotas, `out.profiles`.
absl::Status ParseFunctions(const StrictMap& top, const LoadContext& ctx, LoadedExperiment& out) {
  const YAML::Node list = top.Get("functions");
  if (!top.Has("functions")) return top.ErrorAt("functions", "required field is missing");
  if (!list.IsSequence() || list.size() == 0) {
    return top.ErrorAt("functions", "must be a non-empty list of functions");
  }
  std::vector<FunctionConfig>& functions = out.config.functions;
  // Functions and pipelines share one namespace; function groups make thousands of functions.
  absl::flat_hash_set<std::string> names;
  int i = 0;
  for (const YAML::Node& item : list) {
    const bool pipeline = item.IsMap() && item["pipeline"];
    std::vector<internal::ParsedFunction> parsed;
    std::string pipeline_name;
    if (pipeline) {
      SLUICE_ASSIGN_OR_RETURN(internal::ParsedPipeline p,
                              internal::ParsePipelineFunction(item, i, ctx));
      pipeline_name = p.pipeline.name;
      if (!names.insert(pipeline_name).second) {
        return YamlError(ctx.file, item, absl::StrCat("functions[", i, "].name"),
                         absl::StrCat("duplicate function name '", pipeline_name, "'"));
      }
      for (FunctionConfig& s : p.stages) functions.push_back(std::move(s));
      out.config.pipelines.push_back(std::move(p.pipeline));
      ++i;
      continue;
    }
    if (internal::IsFunctionGroup(item)) {
      SLUICE_ASSIGN_OR_RETURN(parsed,
                              internal::ParseFunctionGroup(item, i, ctx, out.config.seed));
    } else {
      SLUICE_ASSIGN_OR_RETURN(internal::ParsedFunction f, internal::ParseFunction(item, i, ctx));
      parsed.push_back(std::move(f));
    }
    for (internal::ParsedFunction& f : parsed) {
      if (!names.insert(f.config.name).second) {
        return YamlError(ctx.file, item, absl::StrCat("functions[", i, "].name"),
                         absl::StrCat("duplicate function name '", f.config.name, "'"));
      }
      if (f.profile.has_value()) out.profiles.push_back({f.config.name, *std::move(f.profile)});
      functions.push_back(std::move(f.config));
    }
    ++i;
  }
  return absl::OkStatus();
}

const FunctionConfig* FindFunction(const std::vector<FunctionConfig>& fs, absl::string_view name) {
  for (const FunctionConfig& f : fs) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

absl::StatusOr<WorkloadVariant> ParseVariant(const YAML::Node& node, const std::string& field,
                                             const std::vector<FunctionConfig>& functions,
                                             const LoadContext& ctx) {
  SLUICE_ASSIGN_OR_RETURN(StrictMap m, StrictMap::Create(node, ctx.file, field,
                                                         {"name", "functions"}));
  WorkloadVariant v;
  SLUICE_ASSIGN_OR_RETURN(v.name, m.Name("name", std::nullopt));
  if (!m.Has("functions") || !m.Get("functions").IsMap()) {
    return m.ErrorAt("functions", "must be a map of function name: workload");
  }
  for (const auto& kv : m.Get("functions")) {
    const std::string name = kv.first.IsScalar() ? kv.first.Scalar() : "";
    const std::string ffield = JoinField(m.FieldOf("functions"), name);
    const FunctionConfig* f = FindFunction(functions, name);
    // A pipeline's workload is its first stage's.
    const FunctionConfig* first = FindFunction(functions, absl::StrCat(name, "/s0"));
    if (f == nullptr && first != nullptr && first->stage.has_value()) f = first;
    if (f == nullptr) return YamlError(ctx.file, kv.first, ffield, "no such function");
    if (f->kind == core::FunctionKind::kTraining) {
      return YamlError(ctx.file, kv.first, ffield, "a training function has no workload");
    }
    for (const auto& [prev, spec] : v.overrides) {
      if (prev == f->name) return YamlError(ctx.file, kv.first, ffield, "duplicate field");
    }
    SLUICE_ASSIGN_OR_RETURN(WorkloadSpec spec, internal::ParseWorkload(kv.second, ffield, ctx));
    v.overrides.emplace_back(f->name, std::move(spec));
  }
  return v;
}

absl::StatusOr<std::vector<WorkloadVariant>> ParseVariants(
    const StrictMap& top, const std::vector<FunctionConfig>& functions, const LoadContext& ctx) {
  std::vector<WorkloadVariant> variants;
  if (!top.Has("workloads")) return variants;
  const YAML::Node list = top.Get("workloads");
  if (!list.IsSequence() || list.size() == 0) {
    return top.ErrorAt("workloads", "must be a non-empty list of workload variants");
  }
  size_t i = 0;
  for (const YAML::Node& item : list) {
    const std::string field = absl::StrCat("workloads[", i++, "]");
    SLUICE_ASSIGN_OR_RETURN(WorkloadVariant v, ParseVariant(item, field, functions, ctx));
    for (const WorkloadVariant& w : variants) {
      if (w.name == v.name) {
        return YamlError(ctx.file, item, JoinField(field, "name"),
                         absl::StrCat("duplicate workload name '", v.name, "'"));
      }
    }
    variants.push_back(std::move(v));
  }
  return variants;
}

// report_theory_mm1 compares against M/M/1, so every function must be one: Poisson arrivals,
// exponential service, exactly one always-warm instance, and a utilisation below 1.
absl::Status CheckMm1(const StrictMap& top, const SimConfig& c) {
  auto fail = [&](const std::string& function, absl::string_view why) {
    return top.ErrorAt("report_theory_mm1", absl::StrCat("function '", function, "' ", why));
  };
  for (const FunctionConfig& f : c.functions) {
    if (!f.exponential_service_mean.has_value()) {
      return fail(f.name, "needs service: {exponential_mean_ms: ...}");
    }
    if (f.min_instances != 1 || f.max_instances != 1 || f.initial_instances != 1) {
      return fail(f.name, "needs instances: {min: 1, max: 1, initial: 1}");
    }
    std::vector<const WorkloadSpec*> specs = {&f.workload};
    for (const WorkloadVariant& v : c.workloads) {
      for (const auto& [name, spec] : v.overrides) {
        if (name == f.name) specs.push_back(&spec);
      }
    }
    const double mean_s = absl::ToDoubleSeconds(*f.exponential_service_mean);
    for (const WorkloadSpec* w : specs) {
      if (w->kind != WorkloadKind::kPoisson) return fail(f.name, "needs a poisson workload");
      if (w->rate_rps * mean_s >= 1) {
        return fail(f.name, absl::StrCat("is unstable: utilisation ", w->rate_rps * mean_s,
                                         " >= 1"));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ParseRunSettings(const StrictMap& top, const std::string& path, SimConfig& c) {
  std::string stem = std::filesystem::path(path).stem().string();
  SLUICE_ASSIGN_OR_RETURN(c.experiment,
                          top.String("experiment", stem.empty() ? "experiment" : stem));
  SLUICE_RETURN_IF_ERROR(top.String("description", "-").status());
  SLUICE_ASSIGN_OR_RETURN(std::string kind, top.String("kind", "simulation"));
  if (kind != "simulation") {
    return top.ErrorAt("kind", absl::StrCat("'", kind, "' is not a simulation experiment (this "
                                            "loader reads kind: simulation; `sluice sim run` "
                                            "also runs kind: placement_replay)"));
  }
  SLUICE_ASSIGN_OR_RETURN(int64_t seed, top.Int("seed", Range::kNonNegative, 1));
  c.seed = static_cast<uint64_t>(seed);
  SLUICE_ASSIGN_OR_RETURN(double horizon, top.Double("horizon_s", Range::kPositive, 600.0));
  if (horizon > 1e8) return top.ErrorAt("horizon_s", "must be <= 1e8 (about 3 years)");
  c.horizon = absl::Seconds(horizon);
  SLUICE_ASSIGN_OR_RETURN(double interval,
                          top.Double("sample_interval_s", Range::kPositive, 1.0));
  if (interval > horizon) return top.ErrorAt("sample_interval_s", "must be <= horizon_s");
  c.sample_interval = absl::Seconds(interval);
  SLUICE_ASSIGN_OR_RETURN(double drain, top.Double("drain_timeout_s", Range::kNonNegative,
                                                   absl::ToDoubleSeconds(c.drain_timeout)));
  c.drain_timeout = absl::Seconds(drain);
  SLUICE_ASSIGN_OR_RETURN(c.report_theory_mm1, top.Bool("report_theory_mm1", false));
  SLUICE_ASSIGN_OR_RETURN(const int64_t quiet,
                          top.Int("quiet_batch_samples", Range::kPositive, c.quiet_batch_samples));
  if (quiet > 3600) return top.ErrorAt("quiet_batch_samples", "must be at most 3600");
  c.quiet_batch_samples = static_cast<int>(quiet);
  SLUICE_RETURN_IF_ERROR(ParseFluid(top, c.fluid));
  return ParseColdStart(top, c.cold_start);
}

absl::StatusOr<LoadedExperiment> ParseTop(const YAML::Node& root, const std::string& path,
                                          const core::PerfModel& perf) {
  SLUICE_ASSIGN_OR_RETURN(
      StrictMap top,
      StrictMap::Create(root, path, "",
                        {"experiment", "kind", "description", "seed", "horizon_s",
                         "sample_interval_s", "drain_timeout_s", "report_theory_mm1", "cluster",
                         "cold_start", "profiler", "functions", "policies", "workloads",
                         "slo_sweep", "network", "fluid", "quiet_batch_samples"}));
  LoadedExperiment out;
  SimConfig& c = out.config;
  SLUICE_RETURN_IF_ERROR(ParseRunSettings(top, path, c));
  if (!top.Has("cluster")) return top.ErrorAt("cluster", "required field is missing");
  SLUICE_ASSIGN_OR_RETURN(internal::ParsedCluster cluster,
                          internal::ParseCluster(top.Get("cluster"), path));
  c.cluster = std::move(cluster.spec);
  c.gpu_price_per_hour = std::move(cluster.gpu_price_per_hour);
  SLUICE_ASSIGN_OR_RETURN(const core::Profiler profiler, internal::ParseProfiler(top));
  std::string base_dir = std::filesystem::path(path).parent_path().string();
  const LoadContext ctx{path, base_dir.empty() ? "." : base_dir, perf, c.cluster, profiler};
  SLUICE_RETURN_IF_ERROR(ParseFunctions(top, ctx, out));
  SLUICE_ASSIGN_OR_RETURN(c.network, internal::ParseNetwork(top));
  SLUICE_RETURN_IF_ERROR(internal::ApplySloSweep(top, perf, c));
  SLUICE_ASSIGN_OR_RETURN(c.policies, ParsePolicies(top));
  SLUICE_ASSIGN_OR_RETURN(c.workloads, ParseVariants(top, c.functions, ctx));
  if (c.report_theory_mm1) SLUICE_RETURN_IF_ERROR(CheckMm1(top, c));
  return out;
}

}  // namespace

absl::StatusOr<LoadedExperiment> ParseExperimentWithProfiles(const std::string& text,
                                                             const std::string& path,
                                                             const core::PerfModel& perf) {
  try {
    const YAML::Node root = YAML::Load(text);
    return ParseTop(root, path, perf);
  } catch (const YAML::Exception& e) {
    const int line = e.mark.is_null() || e.mark.line < 0 ? 0 : e.mark.line + 1;
    return common::InputError({path, line}, "", absl::StrCat("malformed YAML: ", e.msg));
  }
}

absl::StatusOr<SimConfig> ParseExperiment(const std::string& text, const std::string& path,
                                          const core::PerfModel& perf) {
  SLUICE_ASSIGN_OR_RETURN(LoadedExperiment e, ParseExperimentWithProfiles(text, path, perf));
  return std::move(e.config);
}

absl::StatusOr<SimConfig> ParseExperiment(const std::string& text, const std::string& path) {
  const std::unique_ptr<core::PerfModel> perf = core::PerfModel::BuiltIn();
  return ParseExperiment(text, path, *perf);
}

absl::StatusOr<LoadedExperiment> LoadExperimentWithProfiles(const std::string& path,
                                                            const core::PerfModel& perf) {
  SLUICE_ASSIGN_OR_RETURN(const std::string text, ReadExperimentFile(path));
  return ParseExperimentWithProfiles(text, path, perf);
}

absl::StatusOr<SimConfig> LoadExperiment(const std::string& path, const core::PerfModel& perf) {
  SLUICE_ASSIGN_OR_RETURN(LoadedExperiment e, LoadExperimentWithProfiles(path, perf));
  return std::move(e.config);
}

absl::Status RegisterPipelineModels(const SimConfig& config, core::PerfModel& perf) {
  for (const FunctionConfig& f : config.functions) {
    if (!f.stage.has_value() || perf.Find(f.model).ok()) continue;
    SLUICE_ASSIGN_OR_RETURN(const core::StageModelRef ref, core::ParseStageModelName(f.model));
    SLUICE_RETURN_IF_ERROR(core::AddPipelineStages(perf, ref.model, ref.count, f.name));
  }
  return absl::OkStatus();
}

absl::StatusOr<SimConfig> LoadExperiment(const std::string& path) {
  const std::unique_ptr<core::PerfModel> perf = core::PerfModel::BuiltIn();
  return LoadExperiment(path, *perf);
}

}  // namespace sluice::sim
