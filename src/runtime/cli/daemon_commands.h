// `sluice controller`, `sluice gateway`, `sluice agent`: run one daemon in the foreground until
// SIGTERM/SIGINT, then Stop() it and exit 0. When up, each prints one JSON line
// {"event":"listening","daemon":"<name>","port":<port>} to stdout (`sluice up` reads it from the
// daemon's log to learn an ephemeral port). Registered by runtime_commands.cc.
#ifndef SLUICE_RUNTIME_CLI_DAEMON_COMMANDS_H_
#define SLUICE_RUNTIME_CLI_DAEMON_COMMANDS_H_

#include "CLI/CLI.hpp"

namespace sluice::runtime {

void RegisterControllerCommand(CLI::App& app, int& exit_code);
void RegisterGatewayCommand(CLI::App& app, int& exit_code);
void RegisterAgentCommand(CLI::App& app, int& exit_code);

}  // namespace sluice::runtime

#endif  // SLUICE_RUNTIME_CLI_DAEMON_COMMANDS_H_
