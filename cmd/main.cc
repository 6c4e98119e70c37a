// dtrain: parses the command line into the command tree and runs the chosen subcommand. An
// exception that escapes a subcommand (an allocation that failed, a thread that could not start)
// ends it with one message naming the subcommand, exit status 1.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <new>

#include "cmd/commands.h"
#include "cmd/exit_codes.h"
#include "core/math/blas_kernels.h"

int main(int argc, char** argv) {
  dtrain::math::UseBestBlasKernels();
  int exit_code = dtrain::cli::kExitOk;
  std::unique_ptr<CLI::App> app = dtrain::cli::BuildApp(exit_code);
  try {
    app->parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app->exit(e);  // prints help/version to stdout, errors to stderr
    return code == 0 ? dtrain::cli::kExitOk : dtrain::cli::kExitUsage;
  } catch (const std::exception& e) {
    const auto chosen = app->get_subcommands();
    const std::string doing = chosen.empty() ? "starting" : "running '" + chosen.front()->get_name() + "'";
    const bool memory = dynamic_cast<const std::bad_alloc*>(&e) != nullptr;
    std::fprintf(stderr, "dtrain: %s while %s%s%s\n", memory ? "out of memory" : "cannot go on",
                 doing.c_str(), memory ? "" : ": ", memory ? "" : e.what());
    std::fflush(stderr);
    // Not through destructors: what was half built (a thread that never started) may hang them.
    // The store is crash-safe; nothing else needs closing.
    std::_Exit(dtrain::cli::kExitFailed);
  }
  return exit_code;
}
