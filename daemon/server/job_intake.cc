// JobManager's intake (job_manager.h): the jobs it takes on — submitted ones, those the store
// says were active when the daemon (re)starts, and one adopted by an embedded coordinator — each
// checked and turned into an active Job, then scheduled.
#include <signal.h>
#include <unistd.h>

#include "config/job_file.h"
#include "core/net/host_info.h"
#include "daemon/server/account.h"
#include "daemon/server/active_job.h"
#include "daemon/server/async.h"
#include "daemon/server/submit_limits.h"

namespace dtrain::server {
namespace {

// The cores of the job's cluster.workers replicas, all on this host: what it asks for. An elastic
// job grows beyond them (to max_workers) only within the share its owner has left then.
int AskedCores(const config::JobConfig& job, int host_cores) {
  return JobCores(job, host_cores, job.cluster.workers * job.cluster.model_parallel);
}

}  // namespace

using store::JobState;

asio::awaitable<Result<std::unique_ptr<JobManager::Job>>> JobManager::LoadJob(
    const store::JobRecord& record) {
  const std::int64_t id = record.id;
  // Processes an earlier daemon started died with it (PR_SET_PDEATHSIG): record that.
  auto workers = co_await OffThread(pool_, [this, id] { return store_.Workers(id); });
  if (!workers.ok()) co_return workers.status();
  for (const store::WorkerRecord& w : workers.value()) {
    if (w.state != store::WorkerState::kRunning) continue;
    co_await RecordExit(w.id, ProcessExit{-1, SIGKILL}, store::WallClock());
  }
  config::LoadResult loaded = co_await OffThread(pool_, [&record] {
    return config::ParseJobText(record.spec_toml, "job " + std::to_string(record.id), {}, "/",
                                {config::DataFiles::kUnchecked});
  });
  if (!loaded.ok()) {
    std::string why =
        "its job file no longer validates: " + config::FormatDiagnostic(loaded.diagnostics.front());
    if (Status s = co_await StoreState(id, JobState::kFailed, why); !s.ok()) co_return s;
    co_return std::unique_ptr<Job>();
  }
  JobState state = record.state;
  if (state == JobState::kStarting || state == JobState::kRunning) {
    state = JobState::kRecovering;
    // On a full disk the change waits (StoreState), and the job resumes all the same.
    Status s = co_await StoreState(id, JobState::kRecovering,
                                   "its processes are gone; resuming from the newest checkpoint");
    if (!s.ok()) co_return s;
  }
  auto events = co_await OffThread(pool_, [this, id] { return store_.Events(id); });
  const int restarts = events.ok() ? store::CountRestarts(events.value()) : 0;
  auto job = std::make_unique<Job>(
      id, Owner{static_cast<uid_t>(record.owner_uid), static_cast<gid_t>(record.owner_gid)},
      *loaded.job, settings_.max_restarts, restarts);
  job->spec_toml = record.spec_toml;
  job->state = state;
  job->priority = record.priority;
  job->cores = AskedCores(job->config, settings_.cores);
  co_return job;
}

asio::awaitable<Status> JobManager::Reconcile() {
  auto jobs = co_await OffThread(pool_, [this] { return store_.ListJobs(); });
  if (!jobs.ok()) co_return jobs.status();
  for (const store::JobRecord& record : jobs.value()) {
    if (store::IsTerminal(record.state)) continue;
    Result<std::unique_ptr<Job>> job = co_await LoadJob(record);
    if (!job.ok()) co_return job.status();
    if (job.value()) jobs_[record.id] = std::move(job).value();
  }
  Schedule();
  co_return Status::Ok();
}

asio::awaitable<Status> JobManager::Adopt(std::int64_t id) {
  auto record = co_await OffThread(pool_, [this, id] { return store_.GetJob(id); });
  if (!record.ok()) co_return record.status();
  if (store::IsTerminal(record.value().state)) {
    co_return Status::Error("job " + std::to_string(id) + " has already ended");
  }
  Result<std::unique_ptr<Job>> job = co_await LoadJob(record.value());
  if (!job.ok()) co_return job.status();
  if (!job.value()) co_return Status::Error("job " + std::to_string(id) + " cannot run");
  jobs_[id] = std::move(job).value();
  Schedule();
  co_return Status::Ok();
}

asio::awaitable<CheckedJob> JobManager::CheckSubmission(const std::string& job_toml,
                                                        const std::string& source, Owner owner,
                                                        std::optional<std::string> name,
                                                        std::optional<int> priority) {
  CheckedJob out;
  if (shutting_down_) {
    out.refusal = Refusal{"conflict", "the daemon is stopping", {}};
    co_return out;
  }
  if (!settings_.run_as_owner && owner.uid != ::geteuid()) {
    out.refusal =
        Refusal{"denied",
                "this daemon runs as uid " + std::to_string(::geteuid()) +
                    " and runs only that user's jobs (it cannot start processes as uid " +
                    std::to_string(owner.uid) +
                    "): submit to the system daemon (systemctl start dtraind), or start your own "
                    "(dtraind &)",
                {}};
    co_return out;
  }
  std::string owner_name;        // for [limits] priority_users
  if (settings_.run_as_owner) {  // refused now rather than at its processes' start
    Result<Account> account =
        co_await OffThread(pool_, [owner] { return ResolveAccount(owner.uid, owner.gid); });
    if (!account.ok()) {
      out.refusal = Refusal{"denied", account.status().message(), {}};
      co_return out;
    }
    owner_name = account.value().name;
  }
  // The data files are not looked at here: only the job's processes, with its owner's rights,
  // open them (the client checked them as the owner already). The model must fit this host.
  config::LoadResult loaded = co_await OffThread(pool_, [&] {
    return config::ParseJobText(job_toml, source, {}, "/",
                                {config::DataFiles::kUnchecked, net::PhysicalMemory(), true});
  });
  if (!loaded.ok()) {
    out.refusal =
        Refusal{"invalid_job", source + " is not a valid job file", std::move(loaded.diagnostics)};
    co_return out;
  }
  out.config = std::move(*loaded.job);
  if (name) out.config.name = *name;
  if (priority) out.config.priority = *priority;
  out.cores = AskedCores(out.config, settings_.cores);
  const bool may_raise = MayRaisePriority(owner.uid, owner_name, ::geteuid(), settings_.limits);
  if (std::string over = ApplySubmitLimits(out.config, out.cores, may_raise, settings_.limits,
                                           net::PhysicalMemory());
      !over.empty()) {
    out.refusal = Refusal{"denied", source + ": " + over, {}};
  }
  co_return out;
}

asio::awaitable<Submitted> JobManager::Submit(const std::string& job_toml,
                                              const std::string& source, Owner owner,
                                              std::optional<std::string> name,
                                              std::optional<int> priority,
                                              std::optional<store::SweepTrialRecord> trial) {
  Submitted out;
  CheckedJob checked = co_await CheckSubmission(job_toml, source, owner, name, priority);
  if (checked.refusal) {
    out.refusal = std::move(checked.refusal);
    co_return out;
  }
  config::JobConfig& config = checked.config;
  store::JobRecord record;
  record.name = config.name;
  record.owner_uid = owner.uid;
  record.owner_gid = owner.gid;
  record.priority = config.priority;
  record.spec_toml = config::FormatResolvedJob(config);
  record.tags = config.tags;
  auto create = [this, record, trial] {
    return trial ? store_.CreateTrialJob(*trial, record) : store_.CreateJob(record);
  };
  auto created = co_await OffThread(pool_, create);
  if (!created.ok()) {
    out.refusal = Refusal{"internal", created.status().message(), {}};
    co_return out;
  }
  auto job =
      std::make_unique<Job>(created.value(), owner, std::move(config), settings_.max_restarts, 0);
  job->spec_toml = record.spec_toml;
  job->priority = record.priority;
  job->cores = checked.cores;
  out.id = job->id;
  jobs_[out.id] = std::move(job);
  Schedule();
  co_return out;
}

}  // namespace dtrain::server
