#include "cmd/stored_job.h"

#include <signal.h>

#include <filesystem>
#include <system_error>

#include "config/job_file.h"
#include "core/net/host_info.h"

namespace dtrain::cli {

CliResult<std::unique_ptr<store::Store>> OpenStore(const std::string& path) {
  auto opened = store::Store::Open(path);
  if (!opened.ok()) return CliError{kExitFailed, path + ": " + opened.status().message(), "", {}};
  return std::move(opened).value();
}

CliResult<std::unique_ptr<store::Store>> OpenExistingStore(const std::string& path) {
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    return CliError{kExitNotFound, path + ": no such store file", "not_found", {}};
  }
  return OpenStore(path);
}

CliResult<std::unique_ptr<store::Store>> OpenStoreWithJob(const std::string& db,
                                                          std::int64_t job_id) {
  CliResult<std::unique_ptr<store::Store>> store = OpenExistingStore(db);
  if (!store.ok()) return store;
  CliResult<store::JobRecord> job = StoredJob(*store.value(), job_id, db);
  if (!job.ok()) return job.error();
  return store;
}

CliResult<store::JobRecord> StoredJob(store::Store& store, std::int64_t job_id,
                                      const std::string& db) {
  auto record = store.GetJob(job_id);
  if (record.ok()) return std::move(record).value();
  // Absent, or the store could not be read? Only the former is "not found".
  auto jobs = store.ListJobs();
  if (!jobs.ok()) return ErrorFrom(record.status());
  for (const store::JobRecord& job : jobs.value()) {
    if (job.id == job_id) return ErrorFrom(record.status());
  }
  return CliError{kExitNotFound, db + " has no job " + std::to_string(job_id), "not_found", {}};
}

Status RecordGoneWorkers(store::Store& store, std::int64_t job_id) {
  auto workers = store.Workers(job_id);
  if (!workers.ok()) return workers.status();
  for (const store::WorkerRecord& w : workers.value()) {
    if (w.state != store::WorkerState::kRunning) continue;
    if (w.host == net::LocalHostName() && w.pid > 0 &&
        ::kill(static_cast<pid_t>(w.pid), 0) == 0) {
      return Status::Error("job " + std::to_string(job_id) + " is being run by process " +
                           std::to_string(w.pid));
    }
    // That process is gone without recording its exit (killed): record it now.
    if (Status s = store.RecordWorkerExit(w.id, -1, SIGKILL); !s.ok()) return s;
  }
  return Status::Ok();
}

CliResult<config::JobConfig> ParseRecordedJob(const std::string& spec_toml, std::int64_t job_id) {
  const std::string display = "job " + std::to_string(job_id);
  config::LoadResult loaded = config::ParseJobText(spec_toml, display, {}, "/");
  if (!loaded.ok()) {
    return CliError{kExitFailed, display + ": the recorded job file no longer validates:", "",
                    std::move(loaded.diagnostics)};
  }
  return std::move(*loaded.job);
}

CliResult<config::JobConfig> StoredJobConfig(store::Store& store, std::int64_t job_id,
                                             const std::string& db) {
  CliResult<store::JobRecord> record = StoredJob(store, job_id, db);
  if (!record.ok()) return record.error();
  return ParseRecordedJob(record.value().spec_toml, job_id);
}

}  // namespace dtrain::cli
