// The `sim run` handler. CLI11 (which throws) is confined to RegisterSim; RunSimCommand is plain
// Status-returning code so that tests call it directly.
#include "sim/cli/sim_command.h"

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <string>

#include <unistd.h>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "core/perf/perf_model.h"
#include "sim/cli/llm_command.h"
#include "sim/cli/llm_profile_command.h"
#include "sim/cli/plot_command.h"
#include "sim/cli/predict_command.h"
#include "sim/cli/profile_command.h"
#include "sim/cli/sim_progress.h"
#include "sim/engine/sample_observer.h"
#include "sim/experiment/experiment_loader.h"
#include "sim/experiment/experiment_runner.h"
#include "sim/experiment/report.h"
#include "sim/placement/placement_config.h"
#include "sim/placement/placement_experiment.h"
#include "sim/placement/placement_report.h"
#include "sim/predictor/rapp_data.h"
#include "sim/report/html_report.h"
#include "sim/workload/file_io.h"

namespace sluice::sim {
namespace {

absl::Status WriteEventLogs(const std::string& dir, const ExperimentOutput& output) {
  for (size_t i = 0; i < output.runs.size() && i < output.event_logs.size(); ++i) {
    const RunResult& r = output.runs[i];
    const std::string path = (std::filesystem::path(dir) /
                              absl::StrCat(r.policy, "_", r.workload, "_events.log")).string();
    SLUICE_RETURN_IF_ERROR(WriteTextFile(path, output.event_logs[i]));
  }
  return absl::OkStatus();
}

// `kind: placement_replay` (src/sim/placement): instance lists replayed through placement only.
absl::Status RunPlacement(const SimRunOptions& options, std::ostream& out) {
  if (options.event_log) {
    return absl::InvalidArgumentError("--event-log is for simulation experiments only");
  }
  PlacementRunOptions po;
  po.seed = options.seed;
  po.policies = options.policies;
  po.keep_timeline = !options.out_dir.empty();
  SLUICE_ASSIGN_OR_RETURN(PlacementReport report, RunPlacementExperiment(options.experiment, po));
  if (!options.out_dir.empty()) {
    const std::filesystem::path dir(options.out_dir);
    SLUICE_RETURN_IF_ERROR(CreateOutputDir(options.out_dir));
    SLUICE_RETURN_IF_ERROR(
        WriteTextFile((dir / "summary.json").string(), PlacementReportJsonText(report)));
    for (const PlacementRunReport& run : report.runs) {
      SLUICE_RETURN_IF_ERROR(WriteTextFile((dir / PlacementTimelineFileName(run)).string(),
                                           PlacementTimelineCsv(run)));
    }
  }
  out << (options.json ? PlacementReportJsonText(report) : PlacementReportTable(report));
  out.flush();
  return absl::OkStatus();
}

// Everything but printing the error and the report, so that each failure has one exit path.
absl::Status RunKind(const SimRunOptions& options, std::ostream& out) {
  if (options.event_log && options.out_dir.empty()) {
    return absl::InvalidArgumentError("--event-log needs --out DIR");
  }
  SLUICE_ASSIGN_OR_RETURN(const std::string kind, ReadExperimentKind(options.experiment));
  if (kind == "placement_replay") return RunPlacement(options, out);
  if (kind == "llm_serving") return RunLlmServing(options, out);
  const std::unique_ptr<core::PerfModel> perf = core::PerfModel::BuiltIn();
  // Predictor-backed `rapp/<model>` models (src/sim/predictor), only when the file names one.
  if (absl::StatusOr<std::string> text = ReadFileMaybeXz(options.experiment); text.ok()) {
    SLUICE_RETURN_IF_ERROR(AddRappModelsNamedIn(*text, *perf));
  }
  SLUICE_ASSIGN_OR_RETURN(LoadedExperiment loaded,
                          LoadExperimentWithProfiles(options.experiment, *perf));
  SimConfig& config = loaded.config;
  SLUICE_RETURN_IF_ERROR(RegisterPipelineModels(config, *perf));  // QUART's stage models
  if (options.seed.has_value()) config.seed = *options.seed;
  SLUICE_RETURN_IF_ERROR(SelectPolicies(options.policies, config));
  std::unique_ptr<SimProgressMeter> meter;
  SampleObserver observer;
  if (options.progress != nullptr && options.wall_clock) {
    const int runs = static_cast<int>(std::max<size_t>(1, config.workloads.size()) *
                                      config.policies.size());
    meter = std::make_unique<SimProgressMeter>(*options.progress, options.wall_clock, runs,
                                               config.horizon);
    observer = [m = meter.get()](absl::Duration t, int64_t e) { m->OnSample(t, e); };
  }
  absl::StatusOr<ExperimentOutput> ran = [&] {
    ScopedSampleObserver scope(meter != nullptr ? &observer : nullptr);
    return RunExperiment(config, *perf, options.experiment, options.event_log);
  }();
  if (meter != nullptr) meter->Finish();
  SLUICE_ASSIGN_OR_RETURN(ExperimentOutput output, std::move(ran));
  if (!options.out_dir.empty()) {
    SLUICE_RETURN_IF_ERROR(
        WriteOutputDir(options.out_dir, config, output.runs, loaded.profiles));
    if (options.event_log) SLUICE_RETURN_IF_ERROR(WriteEventLogs(options.out_dir, output));
  }
  out << (options.json ? SummaryJsonText(config, output.runs, loaded.profiles)
                       : SummaryTable(config, output.runs, loaded.profiles));
  out.flush();
  return absl::OkStatus();
}

// Runs the experiment, then draws DIR/report.html from what --out wrote (src/sim/report); the
// table names it, --json output stays pure JSON.
absl::Status Run(const SimRunOptions& options, std::ostream& out) {
  SLUICE_RETURN_IF_ERROR(RunKind(options, out));
  if (options.out_dir.empty()) return absl::OkStatus();
  SLUICE_ASSIGN_OR_RETURN(const std::string report, WriteReport(options.out_dir));
  if (!options.json) out << "\nreport: " << report << "\n";
  out.flush();
  return absl::OkStatus();
}

}  // namespace

int ExitCodeFor(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kOk:
      return 0;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kDataLoss:
      return 2;
    default:
      return 1;
  }
}

int RunSimCommand(const SimRunOptions& options, std::ostream& out, std::ostream& err) {
  const absl::Status status = Run(options, out);
  if (status.ok()) return 0;
  err << "sluice sim run: " << status.message() << "\n";
  err.flush();
  return ExitCodeFor(status);
}

void RegisterSim(CLI::App& app, int& exit_code, std::function<absl::Time()> wall_clock) {
  CLI::App* sim = app.add_subcommand("sim", "discrete-event simulator");
  sim->require_subcommand(1);
  CLI::App* run = sim->add_subcommand("run", "run an experiment YAML under each of its policies");
  auto options = std::make_shared<SimRunOptions>();  // shared with the callback, which CLI11 copies
  options->wall_clock = std::move(wall_clock);
  auto seed = std::make_shared<int64_t>(0);  // signed so that CLI11 rejects "-4"
  run->add_option("experiment", options->experiment, "experiment YAML file")->required();
  CLI::Option* seed_opt = run->add_option("--seed", *seed, "random seed (overrides the file's)")
                              ->check(CLI::Range(int64_t{0}, std::numeric_limits<int64_t>::max()));
  run->add_flag("--json", options->json, "print the JSON summary instead of the table");
  run->add_option("--out", options->out_dir,
                  "write summary.json, CSV timelines, report.html and pareto.svg here");
  run->add_option("--policy", options->policies, "run only this policy (label or name); repeat");
  run->add_flag("--event-log", options->event_log, "with --out: write each run's event log");
  run->callback([options, seed, seed_opt, &exit_code] {
    SimRunOptions o = *options;
    if (seed_opt->count() > 0) o.seed = static_cast<uint64_t>(*seed);
    if (isatty(STDERR_FILENO) == 1) o.progress = &std::cerr;  // quiet when piped
    exit_code = RunSimCommand(o, std::cout, std::cerr);
  });
  RegisterSimProfile(*sim, exit_code);
  RegisterSimPredict(*sim, exit_code);
  RegisterSimLlmProfile(*sim, exit_code);
  RegisterSimPlot(*sim, exit_code);
}

}  // namespace sluice::sim
