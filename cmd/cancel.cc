// dtrain cancel: ask the daemon to cancel a job (its workers checkpoint and stop).
#include <CLI/CLI.hpp>
#include <iostream>

#include "cmd/cli_error.h"
#include "cmd/commands.h"
#include "cmd/daemon_client.h"
#include "cmd/exit_codes.h"
#include "cmd/job_view.h"
#include "cmd/json_fields.h"

namespace dtrain::cli {
namespace {

struct CancelArgs {
  std::int64_t job = 0;
  bool json = false;
};

int Cancel(const CancelArgs& args, const GlobalOptions& globals) {
  CliResult<DaemonClient> client = DaemonClient::Connect(globals);
  if (!client.ok()) return Report(client.error());
  CliResult<nlohmann::json> reply = client.value().Request({{"type", "cancel"}, {"id", args.job}});
  if (!reply.ok()) return Report(reply.error());
  const nlohmann::json& object = JsonObject(reply.value(), "job");
  if (args.json) {
    std::cout << object.dump() << std::endl;
  } else {
    const JobInfo info = ParseJob(object);
    std::cout << "job " << args.job << " (" << info.name << ") cancel recorded; state "
              << info.state << (info.reason.empty() ? "" : ": " + info.reason) << '\n';
  }
  return kExitOk;
}

}  // namespace

void AddCancelCommand(CLI::App& app, Globals globals, int& exit_code) {
  auto args = std::make_shared<CancelArgs>();
  CLI::App* cmd = app.add_subcommand("cancel", "Cancel a job: its workers checkpoint and stop");
  cmd->add_option("job", args->job, "The job id")->required();
  cmd->add_flag("--json", args->json, "Print the daemon's job object");
  cmd->callback([args, globals, &exit_code] { exit_code = Cancel(*args, *globals); });
}

}  // namespace dtrain::cli
