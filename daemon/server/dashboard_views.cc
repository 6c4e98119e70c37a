#include "daemon/server/dashboard_views.h"

#include <pwd.h>

#include <algorithm>
#include <string>
#include <vector>

#include "daemon/store/job_views.h"

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
