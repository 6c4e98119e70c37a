#include "daemon/server/dashboard_views.h"

#include <pwd.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "daemon/server/sweep_standing.h"
#include "daemon/server/sweep_views.h"
#include "daemon/store/job_views.h"
#include "daemon/store/sweep_board.h"

namespace dtrain::server {
namespace {

using nlohmann::json;

json OwnerName(std::int64_t uid) {
  struct passwd entry {};
  struct passwd* found = nullptr;
  std::vector<char> buffer(16384);
  if (::getpwuid_r(static_cast<uid_t>(uid), &entry, buffer.data(), buffer.size(), &found) != 0 ||
      found == nullptr) {
    return nullptr;
  }
  return std::string(found->pw_name);
}

json Hosts(const json& workers) {
  std::vector<std::string> hosts;
  for (const json& w : workers) {
    const std::string host = w["host"].get<std::string>();
    if (std::find(hosts.begin(), hosts.end(), host) == hosts.end()) hosts.push_back(host);
  }
  return hosts;
}

Result<double> FurthestEpoch(store::Store& store, std::int64_t id) {
  Result<std::vector<store::MetricRow>> latest = store.LatestMetrics(id);
  if (!latest.ok()) return latest.status();
  double epoch = 0.0;
  for (const store::MetricRow& m : latest.value()) epoch = std::max(epoch, m.epoch);
  return epoch;
}

// Rows of one worker, at most kMaxSeriesPoints of them: evenly spread by index, the first and
// the last kept, as [[step, value]...]; non-finite values left out.
json Downsampled(const std::vector<store::MetricRow>& rows, int worker) {
  std::vector<const store::MetricRow*> kept;
  for (const store::MetricRow& m : rows) {
    if (m.worker == worker && std::isfinite(m.value)) kept.push_back(&m);
  }
  json points = json::array();
  const std::size_t n = kept.size();
  const std::size_t shown = std::min(n, kMaxSeriesPoints);
  for (std::size_t i = 0; i < shown; ++i) {
    const std::size_t at = shown == 1 ? n - 1 : i * (n - 1) / (shown - 1);
    points.push_back({kept[at]->step, kept[at]->value});
  }
  return points;
}

// The trial's curve of `metric`: its lead process's rows, or its lowest rank's when the lead
// recorded none.
Result<json> TrialSeries(store::Store& store, std::int64_t job, int lead,
                         const std::string& metric) {
  Result<std::vector<store::MetricRow>> rows = store.Metrics(job, metric);
  if (!rows.ok()) return rows.status();
  std::vector<store::MetricRow> named;  // the name filter matches by substring
  bool lead_recorded = false;
  int lowest = lead;
  for (store::MetricRow& m : rows.value()) {
    if (m.name != metric) continue;
    lead_recorded = lead_recorded || m.worker == lead;
    lowest = named.empty() ? m.worker : std::min(lowest, m.worker);
    named.push_back(std::move(m));
  }
  const int worker = lead_recorded ? lead : lowest;
  return Downsampled(named, worker);
}

bool Ended(const json& state) {
  return state == "succeeded" || state == "failed" || state == "cancelled" || state == "removed";
}

}  // namespace

json Progress(std::int64_t step, double epoch, std::int64_t epochs, std::int64_t steps) {
  double done = -1.0;
  if (steps > 0) done = static_cast<double>(step) / static_cast<double>(steps);
  if (epochs > 0) done = std::max(done, epoch / static_cast<double>(epochs));
  if (done < 0.0) return nullptr;
  return std::min(done, 1.0);
}

Result<json> DashboardJobs(store::Store& store, std::optional<store::JobState> state,
                           std::size_t limit, EndedJobRows& ended) {
  Result<std::vector<store::JobRecord>> all = store.ListJobs();
  if (!all.ok()) return all.status();
  EndedJobRows kept;  // only the rows listed now, so that the cache stays the list's size
  json jobs = json::array();
  for (auto it = all.value().rbegin(); it != all.value().rend() && jobs.size() < limit; ++it) {
    if (state && it->state != *state) continue;
    const bool over = store::IsTerminal(it->state);
    if (const auto cached = ended.rows.find(it->id);
        over && cached != ended.rows.end() && cached->second.first == it->updated) {
      jobs.push_back(cached->second.second);
      kept.rows.insert(*cached);
      continue;
    }
    Result<json> job = store::StoredJobJson(store, it->id, false);
    if (!job.ok()) return job.status();
    Result<double> epoch = FurthestEpoch(store, it->id);
    if (!epoch.ok()) return epoch.status();
    json& j = job.value();
    j["owner_name"] = OwnerName(j["owner"].get<std::int64_t>());
    j["hosts"] = Hosts(j["workers"]);
    j["epoch"] = epoch.value();
    if (over) kept.rows[it->id] = {it->updated, j};
    jobs.push_back(std::move(j));
  }
  ended = std::move(kept);
  return jobs;
}

Result<json> DashboardJob(store::Store& store, std::int64_t id, bool with_settings) {
  Result<json> job = store::StoredJobJson(store, id, true);
  if (!job.ok()) return job.status();
  Result<std::vector<store::CheckpointInfo>> checkpoints = store.Checkpoints(id);
  if (!checkpoints.ok()) return checkpoints.status();
  json list = json::array();
  for (const store::CheckpointInfo& c : checkpoints.value()) {
    list.push_back({{"step", c.step}, {"time", c.time}, {"bytes", c.bytes}});
  }
  job.value()["checkpoints"] = std::move(list);
  if (with_settings) {
    Result<store::JobRecord> record = store.GetJob(id);
    if (!record.ok()) return record.status();
    job.value()["settings"] = record.value().spec_toml;
  }
  return job;
}

}  // namespace dtrain::server

namespace dtrain::server {

json SweepListRow(const json& status) {
  const json& sweep = status["sweep"];
  json row = sweep;
  row.erase("max_concurrent");
  row.erase("updated");
  row["owner_name"] = OwnerName(sweep["owner"].get<std::int64_t>());
  std::int64_t ended = 0;
  for (const json& t : status["trials"]) ended += Ended(t["state"]) ? 1 : 0;
  row["ended"] = ended;
  row["best"] = status["best"].is_null() ? json(nullptr) : status["best"]["metric"];
  return row;
}

Result<json> DashboardSweep(store::Store& store, const store::SweepRecord& sweep,
                            const config::SweepLoadResult* generated, TrialStandingCache* cache,
                            EndedSeries& ended) {
  Result<json> status = SweepStatusJson(store, sweep, generated, cache);
  if (!status.ok()) return status.status();
  EndedSeries kept;  // only the trials of the sweep, as ended now
  json series = json::array();
  for (const json& t : status.value()["trials"]) {
    if (t["job"].is_null()) continue;
    const std::int64_t job = t["job"].get<std::int64_t>();
    const std::int64_t steps = t["steps"].get<std::int64_t>();
    json points;
    if (const auto cached = ended.points.find(job);
        Ended(t["state"]) && cached != ended.points.end() && cached->second.first == steps) {
      points = cached->second.second;
    } else {
      Result<json> read = TrialSeries(
          store, job, TrialLeadRank(generated, t["trial"].get<std::int64_t>()), sweep.metric);
      if (!read.ok()) return read.status();
      points = std::move(read).value();
    }
    if (Ended(t["state"])) kept.points[job] = {steps, points};
    series.push_back({{"trial", t["trial"]}, {"job", job}, {"points", std::move(points)}});
  }
  ended = std::move(kept);
  return json{{"sweep", status.value()["sweep"]},
              {"board", store::StatusBoardJson(status.value(), sweep.id)},
              {"series", std::move(series)}};
}

}  // namespace dtrain::server
