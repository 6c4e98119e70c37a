// What the dashboard's pages show of jobs, built from the store alone (daemon/web/app.js reads
// them from the /api/stream events). The daemon lays its live state over them (WebServer).
//
//   EndedJobRows ended;                     // kept by the caller between calls
//   Result<nlohmann::json> jobs = DashboardJobs(store, std::nullopt, 100, ended);
//   Result<nlohmann::json> job = DashboardJob(store, 7);
//
// DashboardJobs: JOB objects without events (job_views.h), each with "owner_name" (the user
// name of its uid, or null), "hosts" (its processes' hosts, each once, in rank order) and
// "epoch" (the furthest fractional epoch its metrics reached, 0 before any). An ended job's row
// is read once and reused while its `updated` time stays the same (it changes only when the job
// is resumed): the list's cost follows its active jobs, not its history. DashboardJob: the JOB
// object with events, "checkpoints" [{"step", "time", "bytes"}] and, `with_settings`,
// "settings" (its resolved job file, which names its data files). Plain functions over the
// store (they block on SQLite): call them off an event loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "core/status.h"
#include "daemon/store/store.h"

namespace dtrain::server {

// The rows of ended jobs a caller's DashboardJobs made: id -> (updated, row). One caller's.
struct EndedJobRows {
  std::map<std::int64_t, std::pair<double, nlohmann::json>> rows;
};

Result<nlohmann::json> DashboardJobs(store::Store& store, std::optional<store::JobState> state,
                                     std::size_t limit, EndedJobRows& ended);
Result<nlohmann::json> DashboardJob(store::Store& store, std::int64_t id, bool with_settings);

// The fraction of its planned length a job has run, from its step and furthest epoch and its
// [train] epochs and steps (0: no limit); null when neither limits it.
nlohmann::json Progress(std::int64_t step, double epoch, std::int64_t epochs, std::int64_t steps);

}  // namespace dtrain::server
