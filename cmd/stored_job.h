// Helpers for subcommands that work on a job recorded in a local store file (`--db PATH`).
//
//   auto store = OpenStoreOrReport(db);            // prints the error itself
//   Result<config::JobConfig> job = StoredJobConfig(*store, id);
//
// One thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "config/job.h"
#include "core/status.h"
#include "daemon/store/store.h"

namespace dtrain::cli {

inline constexpr const char* kDefaultDb = "dtrain.db";

// The store at `path`, or null after printing why it could not be opened.
std::unique_ptr<store::Store> OpenStoreOrReport(const std::string& path);

// The job's fully resolved job file, as recorded at submission, parsed back.
Result<config::JobConfig> StoredJobConfig(store::Store& store, std::int64_t job_id);

}  // namespace dtrain::cli
