// The single `sluice` binary. Each module registers its subcommands here; the handlers live
// beside their modules (src/sim/cli, src/runtime/...). Exit codes: 0 ok, 2 bad input, 1 other.
#include <cstdio>
#include <cstring>
#include <string>

#include "CLI/CLI.hpp"
#include "cli/commands.h"
#include "common/huge_pages.h"

int main(int argc, char** argv) {
  // Simulations re-execute with huge pages first (common/huge_pages.h): a large fleet's state is
  // touched at random, and 4 KiB pages miss the TLB.
  if (argc > 2 && std::strcmp(argv[1], "sim") == 0 && std::strcmp(argv[2], "run") == 0)
    sluice::common::ReexecWithHugePages(argv);
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
