// dtrain logs: print a job's log lines, from the daemon or from a store file (--db); with -f,
// follow them until the job ends.
#include <CLI/CLI.hpp>
#include <iostream>

#include "cmd/cli_error.h"
#include "cmd/commands.h"
#include "cmd/daemon_client.h"
#include "cmd/exit_codes.h"
#include "cmd/follow.h"
#include "cmd/human.h"
#include "cmd/interrupt.h"
#include "cmd/job_view.h"
#include "cmd/json_fields.h"
#include "cmd/stored_job.h"
#include "cmd/terminal.h"
#include "daemon/store/job_views.h"

namespace dtrain::cli {
namespace {

struct LogsArgs {
  std::int64_t job = 0;
  bool follow = false;
  int worker = 0;
  std::int64_t tail = 0;
  std::string since;
  bool worker_given = false;
  bool tail_given = false;
  std::string db;  // empty: ask the daemon
};

// Lines get a rank prefix when the job has several workers.
bool SeveralRanks(const nlohmann::json& job) { return DistinctRanks(ParseJob(job)) > 1; }

int LogsFromStore(LogQuery query, const std::string& db) {
  CliResult<std::unique_ptr<store::Store>> store = OpenStoreWithJob(db, query.job);
  if (!store.ok()) return Report(store.error());
  if (!query.worker) {
    Result<nlohmann::json> job = store::StoredJobJson(*store.value(), query.job, false);
    if (!job.ok()) return Report(ErrorFrom(job.status()));
    query.prefix_ranks = SeveralRanks(job.value());
  }
  if (query.follow) InstallStopHandlers();
  CliResult<nlohmann::json> ended = StreamStoredLogs(*store.value(), query);
  if (!ended.ok()) {
    if (ended.error().exit_code != kExitInterrupted) return Report(ended.error());
    std::cerr << "\ndtrain: stopped following job " << query.job << " in " << db << '\n';
    return kExitInterrupted;
  }
  return kExitOk;
}

int Logs(const LogsArgs& args, const GlobalOptions& globals) {
  LogQuery query;
  query.job = args.job;
  query.follow = args.follow;
  if (args.worker_given) query.worker = args.worker;
  if (args.tail_given) query.tail = args.tail;
  if (!args.since.empty()) {
    query.since = ParseTimePoint(args.since, UnixNow());
    if (!query.since) {
      PrintError(
          "--since takes a duration (10m, 2h, 1d), a local time (2026-11-30 14:05) or "
          "Unix seconds; got '" +
          args.since + "'");
      return kExitUsage;
    }
  }
  if (!args.db.empty()) return LogsFromStore(query, args.db);
  CliResult<DaemonClient> client = DaemonClient::Connect(globals);
  if (!client.ok()) return Report(client.error());
  if (!query.worker) {
    CliResult<nlohmann::json> status =
        client.value().Request({{"type", "status"}, {"id", args.job}});
    if (!status.ok()) return Report(status.error());
    query.prefix_ranks = SeveralRanks(JsonObject(status.value(), "job"));
  }
  query.progress_bar = StderrIsTty();  // with -f: the job's progress below its lines
  if (args.follow) InstallStopHandlers();
  CliResult<nlohmann::json> ended = StreamLogs(client.value(), query);
  if (!ended.ok()) return ReportFollowError(ended.error(), args.job);
  return kExitOk;
}

}  // namespace

void AddLogsCommand(CLI::App& app, Globals globals, int& exit_code) {
  auto args = std::make_shared<LogsArgs>();
  CLI::App* cmd = app.add_subcommand("logs", "Print a job's log lines; -f follows them");
  cmd->add_option("job", args->job, "The job id")->required();
  cmd->add_flag("-f,--follow", args->follow,
                "Keep printing new lines until the job has ended and every line is printed");
  CLI::Option* worker =
      cmd->add_option("--worker", args->worker, "Only the lines of this worker rank")
          ->type_name("R")
          ->check(CLI::NonNegativeNumber);
  CLI::Option* tail = cmd->add_option("--tail", args->tail, "Only the last N lines")
                          ->type_name("N")
                          ->check(CLI::NonNegativeNumber);
  cmd->add_option("--since", args->since,
                  "Only lines from this time on: 10m, 2h, 1d ago, a local time "
                  "(2026-11-30 14:05) or Unix seconds")
      ->type_name("T");
  cmd->add_option("--db", args->db, "Read this store file instead of asking the daemon")
      ->type_name("PATH");
  cmd->callback([args, globals, worker, tail, &exit_code] {
    args->worker_given = worker->count() > 0;
    args->tail_given = tail->count() > 0;
    exit_code = Logs(*args, *globals);
  });
}

}  // namespace dtrain::cli
