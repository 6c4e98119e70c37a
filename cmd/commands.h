// The dtrain command tree, declared once: BuildApp adds every subcommand from its own file.
// --help, the completion scripts (`dtrain completion`) and man/dtrain.1 all derive from or are
// checked against this tree (tests/cmd).
//
//   int exit_code = 0;
//   std::unique_ptr<CLI::App> app = BuildApp(exit_code);
//   app->parse(argc, argv);   // the chosen subcommand's callback runs and sets exit_code
//
// One thread at a time.
#pragma once

#include <memory>

namespace CLI {
class App;
}

namespace dtrain::cli {

std::unique_ptr<CLI::App> BuildApp(int& exit_code);

// One per subcommand file; each adds its subcommand to `app`, whose callback sets exit_code.
void AddRunCommand(CLI::App& app, int& exit_code);
void AddValidateCommand(CLI::App& app, int& exit_code);
void AddExportCommand(CLI::App& app, int& exit_code);
void AddPredictAndEvalCommands(CLI::App& app, int& exit_code);
void AddMetricsCommand(CLI::App& app, int& exit_code);
void AddCompletionCommand(CLI::App& app, int& exit_code);

}  // namespace dtrain::cli
