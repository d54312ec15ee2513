// `sluice sim plot DIR [--charts OUTDIR] [--prefix P]`: redraws DIR/report.html and DIR/pareto.svg
// from the summary.json and timeline CSVs that `sim run --out DIR` wrote (src/sim/report), and
// with --charts also writes every chart as a standalone SVG (docs/figures). Registered under
// `sim` by RegisterSim. Exit codes: 0 ok, 2 a missing or corrupt file (the message names it),
// 1 other failures (a file that cannot be written). Not thread-safe (one call per stream).
#ifndef SLUICE_SIM_CLI_PLOT_COMMAND_H_
#define SLUICE_SIM_CLI_PLOT_COMMAND_H_

#include <ostream>
#include <string>

namespace CLI {
class App;
}  // namespace CLI

namespace sluice::sim {

struct SimPlotOptions {
  std::string dir;         // a `sim run --out` directory
  std::string charts_dir;  // when set: one standalone <prefix><chart id>.svg per chart here
  std::string prefix;      // file-name prefix for --charts
};

// Runs the command: "report: PATH" (and "chart: PATH" per --charts file) to `out`, an error to
// `err` as one line. Returns the exit code.
int RunPlotCommand(const SimPlotOptions& options, std::ostream& out, std::ostream& err);

// Adds `plot` to the `sim` command group; the handler stores its exit code in `exit_code`.
void RegisterSimPlot(CLI::App& sim, int& exit_code);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_CLI_PLOT_COMMAND_H_
