// dtrain resume: ask the daemon to continue an ended (failed or cancelled) job from its newest
// checkpoint, with --set changing what may change on resume; follow it as submit does.
#include <CLI/CLI.hpp>

#include "cmd/cli_error.h"
#include "cmd/commands.h"
#include "cmd/daemon_client.h"
#include "cmd/follow.h"
#include "cmd/json_fields.h"

namespace dtrain::cli {
namespace {

struct ResumeArgs {
  std::int64_t job = 0;
  std::vector<std::string> overrides;
  bool no_wait = false;
  bool json = false;
};

int Resume(const ResumeArgs& args, const GlobalOptions& globals) {
  CliResult<DaemonClient> client = DaemonClient::Connect(globals);
  if (!client.ok()) return Report(client.error());
  CliResult<nlohmann::json> reply = client.value().Request(
      {{"type", "resume"}, {"id", args.job}, {"set", args.overrides}});
  if (!reply.ok()) return Report(reply.error());
  const nlohmann::json& job = JsonObject(reply.value(), "job");
  QueuedJob how;
  how.what = "resumed";
  how.no_wait = args.no_wait;
  how.json = args.json;  // lines get their rank from the first of a rank other than 0
  return FollowQueuedJob(client.value(), job, how);
}

}  // namespace

void AddResumeCommand(CLI::App& app, Globals globals, int& exit_code) {
  auto args = std::make_shared<ResumeArgs>();
  CLI::App* cmd = app.add_subcommand(
      "resume",
      "Queue a failed or cancelled daemon job again, from its newest checkpoint; follow it");
  cmd->add_option("job", args->job, "The job id")->required();
  cmd->add_option("--set", args->overrides,
                  "Change what may change on resume: --set train.epochs=4 (see dtrain(1))")
      ->type_name("KEY=VALUE");
  cmd->add_flag("--no-wait", args->no_wait, "Print the job id and return at once");
  cmd->add_flag("--json",
                args->json,
                "Print the job object (at once with --no-wait, else when it has ended)");
  cmd->callback([args, globals, &exit_code] { exit_code = Resume(*args, *globals); });
}

}  // namespace dtrain::cli
