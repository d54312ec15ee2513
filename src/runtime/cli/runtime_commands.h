// Every platform subcommand of `sluice` (src/runtime/cli): the daemons (controller, gateway,
// agent), up/down, and the client verbs deploy, delete, scale, invoke, status, load. Called from
// src/cli/commands.cc; handlers write the process exit code into `exit_code`.
#ifndef SLUICE_RUNTIME_CLI_RUNTIME_COMMANDS_H_
#define SLUICE_RUNTIME_CLI_RUNTIME_COMMANDS_H_

#include "CLI/CLI.hpp"

namespace sluice::cli {

void RegisterRuntime(CLI::App& app, int& exit_code);

}  // namespace sluice::cli

#endif  // SLUICE_RUNTIME_CLI_RUNTIME_COMMANDS_H_
