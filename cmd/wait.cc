// dtrain wait: block until a daemon job ends; exit with its result.
#include <CLI/CLI.hpp>

#include "cmd/cli_error.h"
#include "cmd/commands.h"
#include "cmd/daemon_client.h"
#include "cmd/follow.h"
#include "cmd/interrupt.h"

namespace dtrain::cli {
namespace {

struct WaitArgs {
  std::int64_t job = 0;
  bool json = false;
};

int Wait(const WaitArgs& args, const GlobalOptions& globals) {
  CliResult<DaemonClient> client = DaemonClient::Connect(globals);
  if (!client.ok()) return Report(client.error());
  InstallStopHandlers();
  CliResult<nlohmann::json> ended = WaitForJob(client.value(), args.job);
  if (!ended.ok()) return ReportFollowError(ended.error(), args.job);
  return FinishFollowing(ended.value(), args.json);
}

}  // namespace

void AddWaitCommand(CLI::App& app, Globals globals, int& exit_code) {
  auto args = std::make_shared<WaitArgs>();
  CLI::App* cmd = app.add_subcommand(
      "wait", "Wait until a job ends; exit 0 if it succeeded, 1 if it failed, 130 if cancelled");
  cmd->add_option("job", args->job, "The job id")->required();
  cmd->add_flag("--json", args->json, "Print the daemon's job object once it has ended");
  cmd->callback([args, globals, &exit_code] { exit_code = Wait(*args, *globals); });
}

}  // namespace dtrain::cli
