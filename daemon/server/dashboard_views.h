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
// "settings" (its resolved job file, which names its data files).
// SweepListRow and DashboardSweep: the sweeps page's rows and one sweep's page (below). Plain
// functions over the store (they block on SQLite): call them off an event loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "config/sweep_file.h"
#include "core/status.h"
#include "daemon/store/store.h"

namespace dtrain::server {

class TrialStandingCache;

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

// A sweep page's chart draws at most this many points of each trial's curve.
inline constexpr std::size_t kMaxSeriesPoints = 300;

// The sweeps page's row of a sweep from its sweep_status reply (sweep_views.h): {"id", "name",
// "owner", "owner_name", "source", "method", "metric", "goal", "state", "reason", "created",
// "trials" (how many it runs), "ended" (how many of them have ended), "best" (the best succeeded
// trial's value of the metric, or null)}.
nlohmann::json SweepListRow(const nlohmann::json& status);

// The curves of the sweep's metric a sweep page drew of ended trials: job -> (its step, points).
// One caller's; kept between calls so that a page reads an ended trial's rows once.
struct EndedSeries {
  std::map<std::int64_t, std::pair<std::int64_t, nlohmann::json>> points;
};

// One sweep's page: {"sweep": SWEEP, "board": what `dtrain sweep status ID --json` prints
// (store/sweep_board.h StatusBoardJson: the leaderboard, ranked), "series": [{"trial", "job",
// "points": [[step, value]...]}] (each started trial's curve of the sweep's metric, recorded by
// its lead process (or, when that recorded none, its lowest rank), finite values only, at most
// kMaxSeriesPoints evenly spread over its rows, the first and the last kept)}. `generated` and
// `cache` as sweep_views.h SweepStatusJson's.
Result<nlohmann::json> DashboardSweep(store::Store& store, const store::SweepRecord& sweep,
                                      const config::SweepLoadResult* generated,
                                      TrialStandingCache* cache, EndedSeries& ended);

}  // namespace dtrain::server
