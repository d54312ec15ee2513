// `sim plot`: a thin shell over src/sim/report. CLI11 (which throws) is confined to
// RegisterSimPlot.
#include "sim/cli/plot_command.h"

#include <iostream>
#include <memory>
#include <vector>

#include "CLI/CLI.hpp"
#include "common/status.h"
#include "sim/cli/sim_command.h"
#include "sim/report/html_report.h"

namespace sluice::sim {
namespace {

absl::Status Plot(const SimPlotOptions& options, std::ostream& out) {
  SLUICE_ASSIGN_OR_RETURN(const std::string path, WriteReport(options.dir));
  out << "report: " << path << "\n";
  if (!options.charts_dir.empty()) {
    SLUICE_ASSIGN_OR_RETURN(const ReportData data, LoadReportDir(options.dir));
    SLUICE_ASSIGN_OR_RETURN(const std::vector<std::string> charts,
                            WriteChartFiles(data, options.charts_dir, options.prefix));
    for (const std::string& c : charts) out << "chart: " << c << "\n";
  }
  out.flush();
  return absl::OkStatus();
}

}  // namespace

int RunPlotCommand(const SimPlotOptions& options, std::ostream& out, std::ostream& err) {
  const absl::Status status = Plot(options, out);
  if (status.ok()) return 0;
  err << "sluice sim plot: " << status.message() << "\n";
  err.flush();
  return ExitCodeFor(status);
}

void RegisterSimPlot(CLI::App& sim, int& exit_code) {
  CLI::App* cmd = sim.add_subcommand(
      "plot", "redraw DIR/report.html and DIR/pareto.svg from a `sim run --out DIR` directory");
  auto o = std::make_shared<SimPlotOptions>();  // shared with the callback, which CLI11 copies
  cmd->add_option("dir", o->dir, "directory written by `sluice sim run --out`")->required();
  cmd->add_option("--charts", o->charts_dir, "also write each chart as a standalone SVG here");
  cmd->add_option("--prefix", o->prefix, "file-name prefix for --charts files");
  cmd->callback([o, &exit_code] { exit_code = RunPlotCommand(*o, std::cout, std::cerr); });
}

}  // namespace sluice::sim
