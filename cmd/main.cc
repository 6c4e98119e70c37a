// dtrain: parses the command line into the command tree and runs the chosen subcommand.
#include <CLI/CLI.hpp>

#include "cmd/commands.h"
#include "cmd/exit_codes.h"

int main(int argc, char** argv) {
  int exit_code = dtrain::cli::kExitOk;
  std::unique_ptr<CLI::App> app = dtrain::cli::BuildApp(exit_code);
  try {
    app->parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app->exit(e);  // prints help/version to stdout, errors to stderr
    return code == 0 ? dtrain::cli::kExitOk : dtrain::cli::kExitUsage;
  }
  return exit_code;
}
