// RegisterAll: the list of subcommand groups.
#include "cli/commands.h"

#include <cstdio>

#include "runtime/cli/runtime_commands.h"
#include "runtime/common/loop_env.h"
#include "runtime/node_cli/node_commands.h"
#include "sim/cli/sim_command.h"

namespace sluice::cli {

void RegisterVersion(CLI::App& app, int& exit_code) {
  app.add_subcommand("version", "print the version")->callback([&exit_code] {
    std::printf("sluice 0.1.0\n");
    exit_code = 0;
  });
}

void RegisterAll(CLI::App& app, int& exit_code) {
  RegisterVersion(app, exit_code);
  sim::RegisterSim(app, exit_code, [] { return runtime::MonotonicNow(); });
  RegisterNode(app, exit_code);
  RegisterRuntime(app, exit_code);
}

}  // namespace sluice::cli
