// `sluice node` subcommands (src/runtime/node_cli): share-test. Registered from
// src/cli/commands.cc; the handler writes the process exit code into `exit_code`.
#ifndef SLUICE_RUNTIME_NODE_CLI_NODE_COMMANDS_H_
#define SLUICE_RUNTIME_NODE_CLI_NODE_COMMANDS_H_

#include "CLI/CLI.hpp"

namespace sluice::cli {

void RegisterNode(CLI::App& app, int& exit_code);

}  // namespace sluice::cli

#endif  // SLUICE_RUNTIME_NODE_CLI_NODE_COMMANDS_H_
