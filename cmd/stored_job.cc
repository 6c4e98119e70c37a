#include "cmd/stored_job.h"

#include "cmd/terminal.h"
#include "config/job_file.h"

namespace dtrain::cli {

std::unique_ptr<store::Store> OpenStoreOrReport(const std::string& path) {
  auto opened = store::Store::Open(path);
  if (!opened.ok()) {
    PrintError(path + ": " + opened.status().message());
    return nullptr;
  }
  return std::move(opened).value();
}

Result<config::JobConfig> StoredJobConfig(store::Store& store, std::int64_t job_id) {
  auto record = store.GetJob(job_id);
  if (!record.ok()) return record.status();
  const std::string display = "job " + std::to_string(job_id);
  config::LoadResult loaded = config::ParseJobText(record.value().spec_toml, display, {}, "/");
  if (!loaded.ok()) {
    std::string message = display + ": the recorded job file no longer validates:";
    for (const config::Diagnostic& d : loaded.diagnostics) {
      message += "\n  " + config::FormatDiagnostic(d);
    }
    return Status::Error(message);
  }
  return *loaded.job;
}

}  // namespace dtrain::cli
