// dtrain status / dtrain list: one job in detail, or a table of recent jobs, from the daemon or
// from a store file (--db: what `dtrain run` records).
#include <CLI/CLI.hpp>
#include <iostream>

#include "cmd/choices.h"
#include "cmd/cli_error.h"
#include "cmd/commands.h"
#include "cmd/daemon_client.h"
#include "cmd/exit_codes.h"
#include "cmd/job_view.h"
#include "cmd/json_fields.h"
#include "cmd/stored_job.h"
#include "cmd/terminal.h"
#include "daemon/store/job_views.h"

namespace dtrain::cli {
namespace {

struct ListArgs {
  std::string state;              // empty: every state
  std::vector<std::string> tags;  // only jobs carrying every one
  int limit = 20;
  bool json = false;
  std::string db;  // empty: ask the daemon
};

struct StatusArgs {
  std::int64_t job = 0;
  bool job_given = false;
  bool json = false;
  std::string db;  // empty: ask the daemon
};

CliResult<nlohmann::json> ListFromDaemon(const ListArgs& args, const GlobalOptions& globals) {
  CliResult<DaemonClient> client = DaemonClient::Connect(globals);
  if (!client.ok()) return client.error();
  nlohmann::json request = {{"type", "list"}, {"limit", args.limit}};
  if (!args.state.empty()) request["state"] = args.state;
  if (!args.tags.empty()) request["tags"] = args.tags;
  CliResult<nlohmann::json> reply = client.value().Request(std::move(request));
  if (!reply.ok()) return reply.error();
  return JsonArray(reply.value(), "jobs");
}

CliResult<nlohmann::json> ListFromStore(const ListArgs& args) {
  CliResult<std::unique_ptr<store::Store>> store = OpenExistingStore(args.db);
  if (!store.ok()) return store.error();
  std::optional<store::JobState> state;
  if (!args.state.empty()) state = store::ParseJobState(args.state).value();  // checked by CLI11
  auto ids =
      store::NewestJobIds(*store.value(), state, static_cast<std::size_t>(args.limit), args.tags);
  if (!ids.ok()) return ErrorFrom(ids.status());
  nlohmann::json jobs = nlohmann::json::array();
  for (const std::int64_t id : ids.value()) {
    Result<nlohmann::json> job = store::StoredJobJson(*store.value(), id, false);
    if (!job.ok()) return ErrorFrom(job.status());
    jobs.push_back(std::move(job).value());
  }
  return jobs;
}

CliResult<nlohmann::json> StatusFromDaemon(const StatusArgs& args, const GlobalOptions& globals) {
  CliResult<DaemonClient> client = DaemonClient::Connect(globals);
  if (!client.ok()) return client.error();
  CliResult<nlohmann::json> reply = client.value().Request({{"type", "status"}, {"id", args.job}});
  if (!reply.ok()) return reply.error();
  return JsonObject(reply.value(), "job");
}

CliResult<nlohmann::json> StatusFromStore(const StatusArgs& args) {
  CliResult<std::unique_ptr<store::Store>> store = OpenStoreWithJob(args.db, args.job);
  if (!store.ok()) return store.error();
  Result<nlohmann::json> job = store::StoredJobJson(*store.value(), args.job, true);
  if (!job.ok()) return ErrorFrom(job.status());
  return std::move(job).value();
}

// The newest jobs as a table, or (json) as an array of JOB objects.
int List(const ListArgs& args, const GlobalOptions& globals) {
  CliResult<nlohmann::json> listed =
      args.db.empty() ? ListFromDaemon(args, globals) : ListFromStore(args);
  if (!listed.ok()) return Report(listed.error());
  const nlohmann::json& jobs = listed.value();
  if (args.json) {
    std::cout << jobs.dump() << std::endl;
    return kExitOk;
  }
  if (jobs.empty()) {
    std::cerr << "no jobs" << (args.state.empty() ? "" : " in state " + args.state)
              << (args.tags.empty() ? "" : " tagged " + JoinTags(args.tags)) << '\n';
    return kExitOk;
  }
  std::vector<JobInfo> infos;
  for (const nlohmann::json& job : jobs) infos.push_back(ParseJob(job));
  PrintJobTable(infos, std::cout, ColorOnStdout());
  return kExitOk;
}

int ShowStatus(const StatusArgs& args, const GlobalOptions& globals) {
  if (!args.job_given) {
    ListArgs recent;
    recent.json = args.json;
    recent.db = args.db;
    return List(recent, globals);
  }
  CliResult<nlohmann::json> job =
      args.db.empty() ? StatusFromDaemon(args, globals) : StatusFromStore(args);
  if (!job.ok()) return Report(job.error());
  const nlohmann::json& object = job.value();
  if (args.json) {
    std::cout << object.dump() << std::endl;
  } else {
    PrintJobDetail(ParseJob(object), std::cout, ColorOnStdout());
  }
  return kExitOk;
}

}  // namespace

void AddStatusAndListCommands(CLI::App& app, Globals globals, int& exit_code) {
  auto status = std::make_shared<StatusArgs>();
  CLI::App* status_cmd = app.add_subcommand(
      "status", "Show a job in detail (state, reason, workers, events), or the recent jobs");
  CLI::Option* job =
      status_cmd->add_option("job", status->job, "The job id (default: list recent jobs)");
  status_cmd->add_flag("--json", status->json, "Print the daemon's job object (or array)");
  status_cmd->add_option("--db", status->db, "Read this store file instead of asking the daemon")
      ->type_name("PATH");
  status_cmd->callback([status, job, globals, &exit_code] {
    status->job_given = job->count() > 0;
    exit_code = ShowStatus(*status, *globals);
  });

  auto list = std::make_shared<ListArgs>();
  CLI::App* list_cmd = app.add_subcommand("list", "List the jobs, newest first");
  Choices(list_cmd->add_option("--state", list->state, "Only jobs in this state"),
          JobStateNames())
      ->type_name("STATE");
  list_cmd->add_option("--tag", list->tags, "Only jobs carrying this tag (repeatable: all of them)")
      ->type_name("TAG");
  list_cmd->add_option("--limit", list->limit, "At most this many jobs")
      ->type_name("N")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  list_cmd->add_flag("--json", list->json, "Print an array of the daemon's job objects");
  list_cmd->add_option("--db", list->db, "Read this store file instead of asking the daemon")
      ->type_name("PATH");
  list_cmd->callback([list, globals, &exit_code] { exit_code = List(*list, *globals); });
}

}  // namespace dtrain::cli
