#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "cmd/commands.h"
#include "cmd/terminal.h"
#include "config/suggest.h"
#include "daemon/worker/worker_command.h"

namespace dtrain::cli {
namespace {

// When no subcommand of `parent` (the root, or a command of commands such as `sweep`) was
// recognised, a first word that is none ("dtrain stauts") is what went wrong, not that a
// subcommand is required: said with the near command, else `what`. The words left over are the
// root's (subcommands hand what they do not know to it).
std::string UnknownCommand(const CLI::App& root, const CLI::App& parent, const std::string& what) {
  const std::vector<std::string> extra = root.remaining();
  if (extra.empty() || extra.front().starts_with("-")) return what;
  std::vector<std::string> names;
  for (const CLI::App* sub :
       parent.get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); })) {
    names.push_back(sub->get_name());
  }
  const std::vector<std::string_view> views(names.begin(), names.end());
  const std::string_view close = config::ClosestName(extra.front(), views);
  return "unknown command '" + extra.front() + "'" +
         (close.empty() ? "" : " (did you mean '" + std::string(close) + "'?)");
}

}  // namespace

std::unique_ptr<CLI::App> BuildApp(int& exit_code) {
  auto app = std::make_unique<CLI::App>(
      "dtrain trains machine-learning models with data-parallel SGD.\n"
      "See dtrain(1), dtrain-job.toml(5), dtrain-sweep.toml(5).",
      "dtrain");
  app->require_subcommand(1);
  // A command line dtrain cannot parse is an error like any other: "dtrain: error: ...", then
  // where the help of the command given is.
  app->failure_message([](const CLI::App* root, const CLI::Error& e) {
    std::string command = "dtrain";
    const CLI::App* leaf = root;  // the last command given: `dtrain sweep run` is two deep
    while (!leaf->get_subcommands().empty()) {
      leaf = leaf->get_subcommands().front();
      command += " " + leaf->get_name();
    }
    const bool commands = !leaf->get_subcommands({}).empty();
    const std::string what = commands ? UnknownCommand(*root, *leaf, e.what()) : e.what();
    return "dtrain: " + Paint(ColorOnStderr(), kBoldRed, "error:") + " " + what + "\nRun '" +
           command + " --help' for more information.\n";
  });
  app->set_version_flag("--version", std::string("dtrain ") + kVersion);
  // Subcommands hand options they do not know to the root, so global options may follow them.
  app->fallthrough();
  auto globals = std::make_shared<GlobalOptions>();
  app->add_option("--socket", globals->socket,
                  "The daemon's control socket (default: $DTRAIN_SOCKET, then the user's, then "
                  "the system's)")
      ->type_name("PATH")
      ->group(kGlobalGroup);
  app->add_option("--host", globals->host,
                  "A daemon's TCP listener, HOST:PORT, instead of a local socket (default: "
                  "$DTRAIN_HOST)")
      ->type_name("HOST:PORT")
      ->group(kGlobalGroup);
  app->add_option("--key-file", globals->key_file,
                  "The cluster key that authenticates --host (default: $DTRAIN_KEY_FILE)")
      ->type_name("PATH")
      ->group(kGlobalGroup);
  AddRunCommand(*app, exit_code);
  AddSweepCommand(*app, globals, exit_code);
  AddSubmitCommand(*app, globals, exit_code);
  AddStatusAndListCommands(*app, globals, exit_code);
  AddCancelCommand(*app, globals, exit_code);
  AddResumeCommand(*app, globals, exit_code);
  AddRemoveAndPruneCommands(*app, globals, exit_code);
  AddWaitCommand(*app, globals, exit_code);
  AddLogsCommand(*app, globals, exit_code);
  AddWhyCommand(*app, globals, exit_code);
  AddMetricsCommand(*app, globals, exit_code);
  AddCompareCommand(*app, globals, exit_code);
  AddCheckpointsCommand(*app, globals, exit_code);
  AddExportCommand(*app, globals, exit_code);
  AddValidateCommand(*app, exit_code);
  AddPredictAndEvalCommands(*app, exit_code);
  AddConvertCommand(*app, exit_code);
  AddVersionCommand(*app, globals, exit_code);
  AddNodesCommand(*app, globals, exit_code);
  AddKeygenCommand(*app, exit_code);
  AddCompletionCommand(*app, exit_code);
  // Hidden: the worker processes `dtrain run` starts for a job of several workers.
  auto worker_args = std::make_shared<worker::WorkerArgs>();
  worker::AddWorkerCommand(*app, *worker_args)->callback([worker_args, &exit_code] {
    exit_code = worker::WorkerMain(*worker_args);
  });
  return app;
}

}  // namespace dtrain::cli
