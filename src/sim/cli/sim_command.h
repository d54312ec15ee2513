// `sluice sim run EXPERIMENT.yaml [--seed N] [--json] [--out DIR] [--policy NAME]...
// [--event-log]`: loads an experiment, runs every (workload x policy) pair in the simulator and
// prints a table (or the JSON summary). Files with `kind: placement_replay` go to the placement
// replay (src/sim/placement) instead. Registered by src/cli/commands.cc. Exit codes: 0 ok,
// 2 bad input (message names file:line: field), 1 other failures. Not thread-safe (one call at a
// time per output stream).
#ifndef SLUICE_SIM_CLI_SIM_COMMAND_H_
#define SLUICE_SIM_CLI_SIM_COMMAND_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace CLI {
class App;
}  // namespace CLI

namespace sluice::sim {

struct SimRunOptions {
  std::string experiment;              // path of the YAML file
  std::optional<uint64_t> seed;        // overrides the file's seed
  bool json = false;                   // print the JSON summary instead of the table
  std::string out_dir;                 // when set: summary.json and CSV timelines go here
  std::vector<std::string> policies;   // run only these (label or registry name)
  bool event_log = false;              // with out_dir: <policy>_<workload>_events.log per run
  // The host's clock, read before and after each run of an llm_serving experiment to report its
  // wall_s and events_per_s; null (tests, and src/sim itself, which reads no clock) leaves them
  // 0 / null. Given by the binary (src/cli).
  std::function<absl::Time()> wall_clock;
  // When set (the binary sets std::cerr when stderr is a terminal) and wall_clock is given:
  // one self-rewriting progress line per simulation experiment (sim_progress.h). Null: quiet.
  std::ostream* progress = nullptr;
};

// Runs the command: the report goes to `out`, errors to `err` as one line each. Returns the
// process exit code.
int RunSimCommand(const SimRunOptions& options, std::ostream& out, std::ostream& err);

// The exit code for a failed status: 2 for bad input (InvalidArgument, NotFound, OutOfRange,
// DataLoss: a malformed or missing input file), 1 otherwise. 0 for OK.
int ExitCodeFor(const absl::Status& status);

// Adds the `sim` command group (`sim run`, and `sim profile` from profile_command.h) to `app`;
// the handlers store their exit code in `exit_code`, which must outlive app.parse().
// `wall_clock` is copied into SimRunOptions::wall_clock.
void RegisterSim(CLI::App& app, int& exit_code, std::function<absl::Time()> wall_clock = nullptr);

}  // namespace sluice::sim

#endif  // SLUICE_SIM_CLI_SIM_COMMAND_H_
