#include <CLI/CLI.hpp>

#include "cmd/commands.h"

namespace dtrain::cli {

std::unique_ptr<CLI::App> BuildApp(int& exit_code) {
  auto app = std::make_unique<CLI::App>(
      "dtrain trains machine-learning models with data-parallel SGD.\n"
      "See dtrain(1), dtrain-job.toml(5).",
      "dtrain");
  app->require_subcommand(1);
  app->set_version_flag("--version", "dtrain 0.1.0");
  AddRunCommand(*app, exit_code);
  AddValidateCommand(*app, exit_code);
  AddExportCommand(*app, exit_code);
  AddPredictAndEvalCommands(*app, exit_code);
  AddMetricsCommand(*app, exit_code);
  AddCompletionCommand(*app, exit_code);
  return app;
}

}  // namespace dtrain::cli
