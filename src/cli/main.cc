// The single `sluice` binary. Each module registers its subcommands here; the handlers live
// beside their modules (src/sim/cli, src/runtime/...). Exit codes: 0 ok, 2 bad input, 1 other.
#include <cstdio>
#include <string>

#include "CLI/CLI.hpp"
#include "cli/commands.h"

int main(int argc, char** argv) {
  CLI::App app{"Sluice: serverless GPU platform for deep-learning inference and training"};
  app.require_subcommand(1);
  int exit_code = 0;
  sluice::cli::RegisterAll(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  return exit_code;
}
