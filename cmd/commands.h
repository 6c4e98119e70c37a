// The dtrain command tree, declared once: BuildApp adds every subcommand from its own file.
// --help, the completion scripts (`dtrain completion`) and man/dtrain.1 all derive from or are
// checked against this tree (tests/cmd).
//
//   int exit_code = 0;
//   std::unique_ptr<CLI::App> app = BuildApp(exit_code);
//   app->parse(argc, argv);   // the chosen subcommand's callback runs and sets exit_code
//
// Options of the root command in the group kGlobalGroup (--socket, --host, --key-file) are global: they may come
// before or after the subcommand, and the completion scripts offer them everywhere.
//
// One thread at a time.
#pragma once

#include <memory>
#include <string>

namespace CLI {
class App;
}

namespace dtrain::cli {

inline constexpr const char* kGlobalGroup = "Global options";
inline constexpr const char* kVersion = DTRAIN_VERSION;  // the project's version, from CMake

// The values of the global options, filled in by parsing before any subcommand runs.
struct GlobalOptions {
  std::string socket;    // --socket PATH; empty: $DTRAIN_SOCKET, then the default sockets
  std::string host;      // --host HOST:PORT; empty: $DTRAIN_HOST, then the Unix socket
  std::string key_file;  // --key-file PATH; empty: $DTRAIN_KEY_FILE, then none
};
using Globals = std::shared_ptr<const GlobalOptions>;

std::unique_ptr<CLI::App> BuildApp(int& exit_code);

// One per subcommand file; each adds its subcommand to `app`, whose callback sets exit_code.
// Commands that talk to the daemon take the global options.
void AddRunCommand(CLI::App& app, int& exit_code);
// `sweep run` (sweep.cc), then the daemon's `sweep submit|status|cancel|best|list`
// (AddSweepDaemonCommands, sweep_daemon.cc), under `sweep`.
void AddSweepCommand(CLI::App& app, Globals globals, int& exit_code);
void AddSweepDaemonCommands(CLI::App& sweep, Globals globals, int& exit_code);
void AddValidateCommand(CLI::App& app, int& exit_code);
void AddSubmitCommand(CLI::App& app, Globals globals, int& exit_code);
void AddStatusAndListCommands(CLI::App& app, Globals globals, int& exit_code);
void AddCancelCommand(CLI::App& app, Globals globals, int& exit_code);
void AddResumeCommand(CLI::App& app, Globals globals, int& exit_code);
void AddRemoveAndPruneCommands(CLI::App& app, Globals globals, int& exit_code);
void AddWaitCommand(CLI::App& app, Globals globals, int& exit_code);
void AddLogsCommand(CLI::App& app, Globals globals, int& exit_code);
void AddWhyCommand(CLI::App& app, Globals globals, int& exit_code);
void AddMetricsCommand(CLI::App& app, Globals globals, int& exit_code);
void AddCompareCommand(CLI::App& app, Globals globals, int& exit_code);
void AddCheckpointsCommand(CLI::App& app, Globals globals, int& exit_code);
void AddExportCommand(CLI::App& app, Globals globals, int& exit_code);
void AddPredictAndEvalCommands(CLI::App& app, int& exit_code);
void AddConvertCommand(CLI::App& app, int& exit_code);
void AddVersionCommand(CLI::App& app, Globals globals, int& exit_code);
void AddNodesCommand(CLI::App& app, Globals globals, int& exit_code);
void AddKeygenCommand(CLI::App& app, int& exit_code);
void AddCompletionCommand(CLI::App& app, int& exit_code);

}  // namespace dtrain::cli
