// Registration of every `sluice` subcommand. Each Register* function adds its subcommand(s)
// to `app`; the handler writes its process exit code into `exit_code`.
#ifndef SLUICE_CLI_COMMANDS_H_
#define SLUICE_CLI_COMMANDS_H_

#include "CLI/CLI.hpp"

namespace sluice::cli {

void RegisterVersion(CLI::App& app, int& exit_code);
// Add new command groups here and call them from RegisterAll (commands.cc).
void RegisterAll(CLI::App& app, int& exit_code);

}  // namespace sluice::cli

#endif  // SLUICE_CLI_COMMANDS_H_
