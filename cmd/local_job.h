// Training one job of a local store in the foreground, without a daemon: what `dtrain run` does
// with a job, and `dtrain sweep run` with each trial. A job of one process trains in this one; a
// job of several runs as worker processes of this binary (`dtrain worker`), coordinated from here
// as dtraind would, the lead process's output shown as it comes.
//
//   Result<std::int64_t> id = CreateLocalJob(store, job);
//   LocalRun ran = RunLocalJob(job, id.value(), store, {db, /*quiet=*/false});
//   if (ran.outcome) ...  // the state, steps and final evaluation; ran.exit_code for the shell
//
// Installs the stop handlers (cmd/interrupt.h): Ctrl-C stops the job after a checkpoint, as
// cancelled. One job at a time per process.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "config/job.h"
#include "core/status.h"
#include "daemon/runner/local_run.h"
#include "daemon/store/store.h"

namespace dtrain::cli {

struct LocalRunOptions {
  std::string db;      // the store's file, named in a stopped job's resume command
  bool quiet = false;  // no progress lines and no worker output (--json); a TTY still has its bar
};

struct LocalRun {
  int exit_code = 0;  // kExitOk (succeeded), kExitInterrupted (cancelled), else kExitFailed
  std::optional<runner::RunOutcome> outcome;  // none when the job could not run (error printed)
};

// A new queued job in `store` for `job`: its resolved text, its name, this user as its owner.
Result<std::int64_t> CreateLocalJob(store::Store& store, const config::JobConfig& job);

// Trains job `job_id` of `store` (whose spec is `job`) to its end.
LocalRun RunLocalJob(const config::JobConfig& job, std::int64_t job_id, store::Store& store,
                     const LocalRunOptions& options);

// How the user goes on with a stopped run: the store named unless it is the default one.
std::string ResumeCommand(const std::string& db, std::int64_t job_id);

}  // namespace dtrain::cli
