// Following a job until it ends: streaming its log lines (`logs`, `logs -f`, `submit`; from a
// store file, `logs --db`)
// or waiting for its end alone (`wait`, `submit --json`), and reporting how following ended.
//
//   LogQuery query;  query.job = 7;  query.follow = true;
//   CliResult<nlohmann::json> job = StreamLogs(client, query);
//   if (!job.ok()) return ReportFollowError(job.error(), 7);
//   PrintJobResult(ParseJob(job.value()), std::cout, ColorOnStdout());
//
// Waits without a deadline end on Ctrl-C (interrupt.h: call InstallStopHandlers first) with an
// error of exit code kExitInterrupted; the job itself keeps running. One thread at a time.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>

#include "cmd/cli_error.h"
#include "cmd/daemon_client.h"
#include "daemon/store/store.h"

namespace dtrain::cli {

struct LogQuery {
  std::int64_t job = 0;
  bool follow = false;               // until the job has ended and every line was sent
  std::optional<int> worker;         // one rank's lines only
  std::optional<std::int64_t> tail;  // the last N lines only
  std::optional<double> since;       // lines from this Unix time on
  bool prefix_ranks = false;         // "rR: " before each line (the job has several workers);
                                     // turned on by the first line of a rank other than 0
  bool progress_bar = false;         // with follow: the daemon's progress as a bar on stderr
                                     // (progress.h's FollowBar; for a TTY), below the lines
};

// Sends `logs` and prints every line as it arrives, stdout lines on stdout and stderr lines on
// stderr; returns the JOB object of the stream's end.
CliResult<nlohmann::json> StreamLogs(DaemonClient& client, const LogQuery& query);

// StreamLogs from a store file instead (`logs --db`): the same lines, read from the store and,
// with follow, read again every 100 ms until the job has ended (e.g. a `dtrain run` writing the
// file meanwhile) or Ctrl-C; returns the store's JOB object of the job at the end.
CliResult<nlohmann::json> StreamStoredLogs(store::Store& store, const LogQuery& query);

// Sends `wait` and returns the JOB object once the job has ended.
CliResult<nlohmann::json> WaitForJob(DaemonClient& client, std::int64_t job);

// The end of following an ended job: its JOB object (`json`) or its result line on stdout;
// returns the job's exit code (ExitCodeForState).
int FinishFollowing(const nlohmann::json& job, bool json);

// The end of `submit` and `resume`, once the daemon queued the job (`job`, its JOB object):
// with `no_wait` its id (or with `json` the object) at once; else "dtrain: <what> job N" on
// stderr and its log lines from now on (with `json`, nothing until it ends) until it has ended,
// then FinishFollowing. Returns the exit code.
struct QueuedJob {
  const char* what = "submitted";  // or "resumed"
  bool prefix_ranks = false;       // the job has several processes
  bool no_wait = false;
  bool json = false;
};
int FollowQueuedJob(DaemonClient& client, const nlohmann::json& job, const QueuedJob& how);

// Reports an error that ended following job `job`: for Ctrl-C, that the job keeps running and
// how to get back to it; any other error as Report does. Returns the error's exit code.
int ReportFollowError(const CliError& error, std::int64_t job);

}  // namespace dtrain::cli
