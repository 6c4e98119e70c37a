// dtrain submit: check a job file here, hand it to the daemon, and (unless --no-wait) follow
// the job's logs until it ends, exiting with its result.
#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>
#include <system_error>

#include "cmd/cli_error.h"
#include "cmd/commands.h"
#include "cmd/daemon_client.h"
#include "cmd/data_checks.h"
#include "cmd/exit_codes.h"
#include "cmd/follow.h"
#include "cmd/json_fields.h"
#include "config/job_file.h"
#include "config/tags_key.h"
#include "config/toml_text.h"

namespace dtrain::cli {
namespace {

struct SubmitArgs {
  std::string job_file;
  std::vector<std::string> overrides;
  std::vector<std::string> tags;  // --tag, added to the job file's
  std::string name;
  int priority = 0;
  bool priority_given = false;
  bool no_wait = false;
  bool json = false;
};

std::string AbsolutePath(const std::string& path) {
  std::error_code error;
  const std::filesystem::path absolute = std::filesystem::absolute(path, error);
  return error ? path : absolute.lexically_normal().string();
}

// A problem with --name or --priority: they are overrides of the top-level keys, and the last
// override of a key wins, so a problem with that key is theirs; said as theirs.
void NameOwnOptions(const SubmitArgs& args, std::vector<config::Diagnostic>& diagnostics) {
  for (config::Diagnostic& d : diagnostics) {
    const bool name = d.key == "name" && !args.name.empty();
    const bool priority = d.key == "priority" && args.priority_given;
    if (d.file == "--set" && (name || priority)) {
      d.file = name ? "--name" : "--priority";
      d.key.clear();
    }
  }
}

int Submit(const SubmitArgs& args, const GlobalOptions& globals) {
  // --name and --priority are overrides like any other, checked the same way.
  std::vector<std::string> overrides = args.overrides;
  if (!args.name.empty()) overrides.push_back("name=" + config::TomlString(args.name));
  if (args.priority_given) overrides.push_back("priority=" + std::to_string(args.priority));
  config::LoadResult loaded = config::LoadJobFile(args.job_file, overrides);
  if (!loaded.ok()) {
    NameOwnOptions(args, loaded.diagnostics);
    PrintDiagnostics(loaded.diagnostics, args.job_file);
    return kExitUsage;
  }
  config::JobConfig& job = *loaded.job;
  if (std::vector<config::Diagnostic> tags = config::AddTags(args.tags, &job.tags); !tags.empty()) {
    PrintDiagnostics(tags, args.job_file);
    return kExitUsage;
  }
  // The data checks of dtrain validate, here where the submitter's rights are.
  if (CliResult<CheckedData> data = CheckJobData(job); !data.ok()) return Report(data.error());

  CliResult<DaemonClient> client = DaemonClient::Connect(globals);
  if (!client.ok()) return Report(client.error());
  nlohmann::json request = {{"type", "submit"},
                            {"job_toml", config::FormatResolvedJob(job)},
                            {"source", AbsolutePath(args.job_file)}};
  if (!args.name.empty()) request["name"] = job.name;
  if (args.priority_given) request["priority"] = job.priority;
  CliResult<nlohmann::json> reply = client.value().Request(std::move(request));
  if (!reply.ok()) return Report(reply.error());
  QueuedJob how;
  how.prefix_ranks = job.cluster.Processes() > 1;
  how.no_wait = args.no_wait;
  how.json = args.json;
  return FollowQueuedJob(client.value(), JsonObject(reply.value(), "job"), how);
}

}  // namespace

void AddSubmitCommand(CLI::App& app, Globals globals, int& exit_code) {
  auto args = std::make_shared<SubmitArgs>();
  CLI::App* cmd = app.add_subcommand(
      "submit", "Check a job file and queue it on the daemon; follow it until it ends");
  cmd->add_option("job_file", args->job_file, "The job file (job.toml)")->required();
  cmd->add_option("--set", args->overrides, "Override a job-file key: --set train.epochs=1")
      ->type_name("KEY=VALUE");
  cmd->add_option("--tag", args->tags, "Tag the job (besides the job file's tags; repeatable)")
      ->type_name("TAG");
  cmd->add_option("--name", args->name, "The job's name (instead of the job file's)")
      ->type_name("NAME");
  CLI::Option* priority =
      cmd->add_option("--priority", args->priority,
                      "Among queued jobs, higher runs first (-100..100; instead of the job "
                      "file's)")
          ->type_name("P");
  cmd->add_flag("--no-wait", args->no_wait, "Print the job id and return at once");
  cmd->add_flag("--json", args->json,
                "Print the job object (at once with --no-wait, else when it has ended)");
  cmd->callback([args, globals, priority, &exit_code] {
    args->priority_given = priority->count() > 0;
    exit_code = Submit(*args, *globals);
  });
}

}  // namespace dtrain::cli
