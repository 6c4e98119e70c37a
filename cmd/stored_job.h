// Helpers for subcommands that work on a job recorded in a local store file (`run`, and
// `metrics`, `checkpoints`, `export` with `--db PATH`), and for reading a recorded job file back
// (also what the daemon sends as `spec_toml`).
//
//   CliResult<std::unique_ptr<store::Store>> store = OpenStoreWithJob(db, id);
//   if (!store.ok()) return Report(store.error());   // no such file or job: exit 4
//   CliResult<config::JobConfig> job = StoredJobConfig(*store.value(), id, db);
//
// One thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "cmd/cli_error.h"
#include "config/job.h"
#include "daemon/store/store.h"

namespace dtrain::cli {

inline constexpr const char* kDefaultDb = "dtrain.db";

// The store at `path`, created when missing (for `run`).
CliResult<std::unique_ptr<store::Store>> OpenStore(const std::string& path);
// The store at `path`, which must exist: reading commands never create one. A missing file is
// kExitNotFound (it holds no job).
CliResult<std::unique_ptr<store::Store>> OpenExistingStore(const std::string& path);

// OpenExistingStore, then StoredJob: the store at `db`, when it holds the job.
CliResult<std::unique_ptr<store::Store>> OpenStoreWithJob(const std::string& db,
                                                          std::int64_t job_id);

// The job's record; kExitNotFound, naming `db`, when the store has no such job.
CliResult<store::JobRecord> StoredJob(store::Store& store, std::int64_t job_id,
                                      const std::string& db);

// A job of a local store left unended (queued .. recovering): an error naming the process while
// a live process on this host runs it; otherwise the exit of each worker recorded as running,
// whose process is gone (killed), is recorded now, and the job may be taken over.
Status RecordGoneWorkers(store::Store& store, std::int64_t job_id);

// A recorded, fully resolved job file parsed back (exit code kExitFailed if it no longer
// validates, e.g. a data file has gone).
CliResult<config::JobConfig> ParseRecordedJob(const std::string& spec_toml, std::int64_t job_id);

// StoredJob, then ParseRecordedJob of its job file.
CliResult<config::JobConfig> StoredJobConfig(store::Store& store, std::int64_t job_id,
                                             const std::string& db);

}  // namespace dtrain::cli
