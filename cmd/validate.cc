// dtrain validate: check a job file and print it fully resolved, or every problem in it.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cmd/cli_error.h"
#include "cmd/commands.h"
#include "cmd/exit_codes.h"
#include "config/job_file.h"
#include "core/net/host_info.h"

namespace dtrain::cli {
namespace {

struct ValidateArgs {
  std::string job_file;
  std::vector<std::string> overrides;
};

int Validate(const ValidateArgs& args) {
  // The model must fit this host (dtrain submit leaves that to the daemon it submits to).
  config::LoadResult loaded =
      config::LoadJobFile(args.job_file, args.overrides, {config::DataFiles::kCheck, net::PhysicalMemory()});
  if (!loaded.ok()) {
    PrintDiagnostics(loaded.diagnostics, args.job_file);
    return kExitUsage;
  }
  std::cout << config::FormatResolvedJob(*loaded.job);
  return kExitOk;
}

}  // namespace

void AddValidateCommand(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<ValidateArgs>();
  CLI::App* cmd = app.add_subcommand(
      "validate", "Check a job file; print it fully resolved (defaults filled in) or its errors");
  cmd->add_option("job_file", args->job_file, "The job file (job.toml)")->required();
  cmd->add_option("--set", args->overrides, "Override a job-file key: --set train.epochs=1")
      ->type_name("KEY=VALUE");
  cmd->callback([args, &exit_code] { exit_code = Validate(*args); });
}

}  // namespace dtrain::cli
