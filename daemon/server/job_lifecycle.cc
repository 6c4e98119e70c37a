// JobManager's part for jobs that have ended: resuming one as a new attempt, removing one or
// pruning many from the store (job_manager.h).
#include <set>
#include <utility>

#include "config/job_file.h"
#include "config/resume_settings.h"
#include "core/net/host_info.h"
#include "daemon/server/async.h"
#include "daemon/server/job_manager.h"

namespace dtrain::server {

using store::JobState;

asio::awaitable<std::optional<Refusal>> JobManager::CheckEndedJob(std::int64_t id, uid_t caller,
                                                                  const std::string& what,
                                                                  store::JobRecord* record) {
  const std::string name = "job " + std::to_string(id);
  auto found = co_await OffThread(pool_, [this, id] { return store_.GetJob(id); });
  if (!found.ok()) co_return Refusal{"not_found", "no " + name, {}};
  *record = std::move(found).value();
  if (caller != 0 && static_cast<std::int64_t>(caller) != record->owner_uid) {
    co_return Refusal{"denied",
                      name + " belongs to uid " + std::to_string(record->owner_uid) +
                          "; only its owner or root may " + what + " it",
                      {}};
  }
  if (jobs_.contains(id) || !store::IsTerminal(record->state)) {
    co_return Refusal{"conflict",
                      name + " is " + std::string(store::JobStateName(record->state)) +
                          ", not ended: stop it first with dtrain cancel " + std::to_string(id),
                      {}};
  }
  if (changing_.contains(id)) {
    co_return Refusal{"conflict", name + " is being resumed or removed by another request", {}};
  }
  if (shutting_down_) co_return Refusal{"conflict", "the daemon is stopping", {}};
  co_return std::nullopt;
}

asio::awaitable<std::optional<Refusal>> JobManager::Resume(std::int64_t id, uid_t caller,
                                                           std::vector<std::string> overrides) {
  store::JobRecord record;
  if (auto refused = co_await CheckEndedJob(id, caller, "resume", &record)) co_return refused;
  const std::string name = "job " + std::to_string(id);
  if (record.state == JobState::kSucceeded) {
    co_return Refusal{"conflict",
                      name + " succeeded: there is nothing to resume; to train further, submit "
                             "its job file again",
                      {}};
  }
  co_return co_await Requeue(record, overrides, "resumed by uid " + std::to_string(caller));
}

asio::awaitable<std::optional<Refusal>> JobManager::Continue(std::int64_t id,
                                                             std::vector<std::string> overrides,
                                                             std::string reason) {
  store::JobRecord record;
  if (auto refused = co_await CheckEndedJob(id, 0, "continue", &record)) co_return refused;
  if (record.state != JobState::kSucceeded) {
    co_return Refusal{"conflict",
                      "job " + std::to_string(id) + " is " +
                          std::string(store::JobStateName(record.state)) + ", not succeeded",
                      {}};
  }
  co_return co_await Requeue(record, overrides, reason);
}

asio::awaitable<std::optional<Refusal>> JobManager::Requeue(
    const store::JobRecord& record, const std::vector<std::string>& overrides,
    const std::string& reason) {
  const std::int64_t id = record.id;
  const std::string name = "job " + std::to_string(id);
  changing_.insert(id);
  struct Done {
    std::set<std::int64_t>& changing;
    std::int64_t id;
    ~Done() { changing.erase(id); }
  } done{changing_, id};
  // Checked as a submission is: the data files are not looked at here.
  config::LoadResult settled = co_await OffThread(pool_, [&record, &name, &overrides] {
    return config::ApplyResumeSettings(
        record.spec_toml, name, overrides,
        {config::DataFiles::kUnchecked, net::PhysicalMemory(), true});
  });
  if (!settled.ok()) {
    co_return Refusal{"invalid_job", name + ": cannot resume it so",
                      std::move(settled.diagnostics)};
  }
  const std::string spec = overrides.empty() ? "" : config::FormatResolvedJob(*settled.job);
  Status queued = co_await OffThread(pool_, [this, id, &overrides, &spec, &reason] {
    return store_.RequeueJob(id, reason, spec,
                             overrides.empty() ? "" : config::ResumeSettingsReason(overrides));
  });
  if (queued.ok()) queued = co_await Adopt(id);
  if (!queued.ok()) co_return Refusal{"internal", queued.message(), {}};
  co_return std::nullopt;
}

asio::awaitable<Removed> JobManager::Remove(std::int64_t id, uid_t caller) {
  Removed out;
  store::JobRecord record;
  out.refusal = co_await CheckEndedJob(id, caller, "remove", &record);
  if (out.refusal) co_return out;
  changing_.insert(id);
  auto deleted = co_await OffThread(pool_, [this, id] { return store_.DeleteJob(id); });
  changing_.erase(id);
  if (!deleted.ok()) {
    out.refusal = Refusal{"internal", deleted.status().message(), {}};
    co_return out;
  }
  out.jobs.push_back(std::move(deleted).value());
  out.reclaimed = co_await AfterRemoval(out.jobs);
  co_return out;
}

asio::awaitable<Removed> JobManager::Prune(store::PruneFilter filter, bool dry_run) {
  Removed out;
  auto jobs = co_await OffThread(pool_, [this] { return store_.ListJobs(); });
  if (!jobs.ok()) {
    out.refusal = Refusal{"internal", jobs.status().message(), {}};
    co_return out;
  }
  for (store::JobRecord& job : jobs.value()) {
    if (!store::Prunable(job, filter) || jobs_.contains(job.id) || changing_.contains(job.id)) {
      continue;
    }
    if (dry_run) {
      out.jobs.push_back(std::move(job));
      continue;
    }
    const std::int64_t id = job.id;
    changing_.insert(id);
    auto deleted = co_await OffThread(pool_, [this, id] { return store_.DeleteJob(id); });
    changing_.erase(id);
    // One resumed meanwhile is no longer ended, and stays.
    if (deleted.ok()) out.jobs.push_back(std::move(deleted).value());
  }
  if (!dry_run && !out.jobs.empty()) out.reclaimed = co_await AfterRemoval(out.jobs);
  co_return out;
}

asio::awaitable<std::uint64_t> JobManager::AfterRemoval(
    const std::vector<store::JobRecord>& removed) {
  auto reclaimed = co_await OffThread(pool_, [this] { return store_.Reclaim(); });
  std::set<uid_t> owners;
  for (const store::JobRecord& job : removed) owners.insert(static_cast<uid_t>(job.owner_uid));
  for (const uid_t uid : owners) {
    if (user_logs_.contains(uid)) co_await ChargeUserLogs(uid);
  }
  co_return reclaimed.ok() ? reclaimed.value() : 0;
}

asio::awaitable<void> JobManager::ChargeUserLogs(uid_t uid) {
  // What the store holds of this user's logs counts against their quota.
  const Result<store::Store::LogVolume> stored =
      co_await OffThread(pool_, [this, uid] { return store_.LogVolumeOfOwner(uid); });
  const store::Store::LogVolume v = stored.ok() ? stored.value() : store::Store::LogVolume{};
  user_logs_.insert_or_assign(uid, LogQuota(settings_.limits.log_quota_per_user,
                                            "of uid " + std::to_string(uid) +
                                                "'s jobs in this store",
                                            "uid " + std::to_string(uid) + "'s log quota reached",
                                            v.bytes + v.lines * LogQuota::kRowCost));
}

}  // namespace dtrain::server
