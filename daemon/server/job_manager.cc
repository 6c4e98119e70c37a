#include "daemon/server/job_manager.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <random>

#include "config/job_file.h"
#include "core/net/host_name.h"
#include "daemon/runner/supported.h"
#include "daemon/server/async.h"

namespace dtrain::server {
namespace {

using store::JobState;
using namespace std::chrono_literals;

std::string RandomToken() {
  std::random_device device;
  std::string token;
  static constexpr char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 32; ++i) token.push_back(kHex[device() % 16]);
  return token;
}

std::string DescribeExit(const ProcessExit& exit) {
  if (exit.signal != 0) {
    const char* name = ::sigabbrev_np(exit.signal);
    return "killed by signal " + (name != nullptr ? "SIG" + std::string(name)
                                                  : std::to_string(exit.signal));
  }
  return "exited with status " + std::to_string(exit.exit_status);
}

}  // namespace

struct JobManager::Job {
  std::int64_t id = 0;
  config::JobConfig config;
  std::string spec_toml;
  JobState state = JobState::kQueued;
  int priority = 0;
  int cores = 1;
  int max_restarts = 0;
  int restarts = 0;
  std::string pending_reason;
  // The worker process, while one runs.
  pid_t pid = 0;
  std::int64_t worker_row = 0;
  std::string token;
  bool connected = false;
  std::string done_stop;  // what the worker said when it finished: completed, target, requested
  std::int64_t steps = 0;
  bool cancel_requested = false;
  uid_t cancelled_by = 0;
  bool stop_sent = false;  // SIGTERM sent to this worker (its SIGKILL timer is running)
};

JobManager::JobManager(asio::io_context& io, asio::thread_pool& pool, store::Store& store,
                       Supervisor& supervisor, ManagerSettings settings)
    : io_(io), pool_(pool), store_(store), supervisor_(supervisor), settings_(std::move(settings)) {}

JobManager::~JobManager() = default;

int JobManager::running() const {
  return static_cast<int>(std::count_if(jobs_.begin(), jobs_.end(), [](const auto& j) {
    return j.second->pid != 0;
  }));
}

int JobManager::queued() const { return static_cast<int>(jobs_.size()) - running(); }

int JobManager::CoresInUse() const {
  int used = 0;
  for (const auto& [id, job] : jobs_) used += job->pid != 0 ? job->cores : 0;
  return used;
}

std::optional<LiveJob> JobManager::Live(std::int64_t id) const {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return std::nullopt;
  return LiveJob{it->second->pending_reason, it->second->restarts};
}

void JobManager::Reload(const ManagerSettings& settings) {
  settings_.max_jobs = settings.max_jobs;
  settings_.cores = settings.cores;
  settings_.grace = settings.grace;
  settings_.max_restarts = settings.max_restarts;
  Schedule();
}

asio::awaitable<Status> JobManager::Reconcile() {
  auto jobs = co_await OffThread(pool_, [this] { return store_.ListJobs(); });
  if (!jobs.ok()) co_return jobs.status();
  for (const store::JobRecord& record : jobs.value()) {
    if (store::IsTerminal(record.state)) continue;
    const std::int64_t id = record.id;
    // Workers the previous daemon started died with it (PR_SET_PDEATHSIG): record that.
    auto workers = co_await OffThread(pool_, [this, id] { return store_.Workers(id); });
    if (!workers.ok()) co_return workers.status();
    for (const store::WorkerRecord& w : workers.value()) {
      if (w.state != store::WorkerState::kRunning) continue;
      const std::int64_t row = w.id;
      Status s = co_await OffThread(pool_, [this, row] { return store_.RecordWorkerExit(row, -1, SIGKILL); });
      if (!s.ok()) co_return s;
    }
    config::LoadResult loaded = co_await OffThread(pool_, [&record] {
      return config::ParseJobText(record.spec_toml, "job " + std::to_string(record.id), {}, "/");
    });
    if (!loaded.ok()) {
      std::string why = "after a daemon restart its job file no longer validates: " +
                        config::FormatDiagnostic(loaded.diagnostics.front());
      auto fail = [this, id, why] { return store_.SetJobState(id, JobState::kFailed, why); };
      Status s = co_await OffThread(pool_, fail);
      if (!s.ok()) co_return s;
      continue;
    }
    JobState state = record.state;
    if (state == JobState::kStarting || state == JobState::kRunning) {
      state = JobState::kRecovering;
      Status s = co_await OffThread(pool_, [this, id] {
        return store_.SetJobState(id, JobState::kRecovering,
                                  "the daemon restarted; resuming from the newest checkpoint");
      });
      if (!s.ok()) co_return s;
    }
    auto job = std::make_unique<Job>();
    job->id = id;
    job->config = *loaded.job;
    job->spec_toml = record.spec_toml;
    job->state = state;
    job->priority = record.priority;
    job->cores = std::max(1, job->config.cluster.workers * job->config.threads);
    job->max_restarts =
        job->config.max_restarts >= 0 ? job->config.max_restarts : settings_.max_restarts;
    auto events = co_await OffThread(pool_, [this, id] { return store_.Events(id); });
    if (events.ok()) {
      for (const store::EventRecord& e : events.value()) {
        job->restarts += e.reason.rfind("restart ", 0) == 0 ? 1 : 0;
      }
    }
    jobs_[id] = std::move(job);
  }
  Schedule();
  co_return Status::Ok();
}

asio::awaitable<Submitted> JobManager::Submit(const std::string& job_toml,
                                              const std::string& source, uid_t owner,
                                              std::optional<std::string> name,
                                              std::optional<int> priority) {
  Submitted out;
  if (shutting_down_) {
    out.refusal = Refusal{"conflict", "the daemon is stopping", {}};
    co_return out;
  }
  config::LoadResult loaded =
      co_await OffThread(pool_, [&] { return config::ParseJobText(job_toml, source, {}, "/"); });
  if (!loaded.ok()) {
    out.refusal = Refusal{"invalid_job", source + " is not a valid job file",
                          std::move(loaded.diagnostics)};
    co_return out;
  }
  config::JobConfig config = *loaded.job;
  if (Status runnable = runner::CheckRunnable(config); !runnable.ok()) {
    out.refusal = Refusal{"invalid_job", source + ": " + runnable.message(), {}};
    co_return out;
  }
  if (name) config.name = *name;
  if (priority) config.priority = *priority;
  const int cores = std::max(1, config.cluster.workers * config.threads);
  if (cores > settings_.cores) {
    out.refusal = Refusal{"invalid_job",
                          "the job needs " + std::to_string(cores) + " cores (cluster.workers x "
                          "train.threads) but this daemon has " +
                              std::to_string(settings_.cores),
                          {}};
    co_return out;
  }
  store::JobRecord record;
  record.name = config.name;
  record.owner_uid = owner;
  record.priority = config.priority;
  record.spec_toml = config::FormatResolvedJob(config);
  auto create = [this, record] { return store_.CreateJob(record); };
  auto created = co_await OffThread(pool_, create);
  if (!created.ok()) {
    out.refusal = Refusal{"internal", created.status().message(), {}};
    co_return out;
  }
  auto job = std::make_unique<Job>();
  job->id = created.value();
  job->config = std::move(config);
  job->spec_toml = record.spec_toml;
  job->priority = record.priority;
  job->cores = cores;
  job->max_restarts =
      job->config.max_restarts >= 0 ? job->config.max_restarts : settings_.max_restarts;
  out.id = job->id;
  jobs_[out.id] = std::move(job);
  Schedule();
  co_return out;
}

void JobManager::Schedule() {
  if (shutting_down_) return;
  std::vector<Job*> waiting;
  for (auto& [id, job] : jobs_) {
    if (job->pid == 0 && !job->cancel_requested &&
        (job->state == JobState::kQueued || job->state == JobState::kRecovering)) {
      waiting.push_back(job.get());
    }
  }
  std::sort(waiting.begin(), waiting.end(), [](const Job* a, const Job* b) {
    return a->priority != b->priority ? a->priority > b->priority : a->id < b->id;
  });
  // Strict order within the queue: a job that does not fit holds back those behind it.
  for (std::size_t i = 0; i < waiting.size(); ++i) {
    Job* job = waiting[i];
    const int free_cores = settings_.cores - CoresInUse();
    if (running() >= settings_.max_jobs) {
      job->pending_reason = "waiting for a job slot (max_jobs = " +
                            std::to_string(settings_.max_jobs) + ")";
    } else if (job->cores > free_cores) {
      job->pending_reason = "waiting for cores (needs " + std::to_string(job->cores) + ", " +
                            std::to_string(free_cores) + " free)";
    } else {
      job->pending_reason.clear();
      job->pid = -1;  // reserved until the process exists
      asio::co_spawn(io_, Start(job->id), asio::detached);
      continue;
    }
    for (std::size_t j = i + 1; j < waiting.size(); ++j) {
      waiting[j]->pending_reason = "waiting behind job " + std::to_string(job->id);
    }
    break;
  }
}

asio::awaitable<void> JobManager::Start(std::int64_t id) {
  Job* job = jobs_.at(id).get();
  if (job->state == JobState::kQueued) {
    Status s = co_await OffThread(pool_, [this, id] {
      return store_.SetJobState(id, JobState::kStarting, "starting the worker process");
    });
    job = jobs_.at(id).get();
    if (!s.ok()) {
      job->pid = 0;
      co_await Finish(id, JobState::kFailed, s.message());
      co_return;
    }
    job->state = JobState::kStarting;
  }
  job->token = RandomToken();
  job->connected = false;
  job->stop_sent = false;
  job->done_stop.clear();
  const std::vector<std::string> argv = {
      settings_.worker_exe, "worker", "--socket", settings_.socket_path, "--job",
      std::to_string(id), "--rank", "0", "--token", job->token, "--parent",
      std::to_string(::getpid())};
  Result<pid_t> pid = supervisor_.Spawn(
      argv,
      [this, id](std::string_view stream, std::string_view line) {
        store_.AppendLog(id, 0, stream, line);
      },
      [this, id](ProcessExit exit) { asio::co_spawn(io_, OnWorkerExit(id, exit), asio::detached); });
  if (!pid.ok()) {
    job->pid = 0;
    const std::string reason = pid.status().message();
    co_await Finish(id, JobState::kFailed, reason);
    co_return;
  }
  job->pid = pid.value();
  const pid_t worker_pid = pid.value();
  if (shutting_down_ || job->cancel_requested) {  // asked while the process was being started
    supervisor_.Stop(worker_pid, settings_.grace);
    job->stop_sent = true;
  }
  auto row = co_await OffThread(pool_, [this, id, worker_pid] {
    return store_.RecordWorkerStart(id, 0, "replica", net::LocalHostName(), worker_pid);
  });
  auto it = jobs_.find(id);
  if (it != jobs_.end() && row.ok()) it->second->worker_row = row.value();
}

asio::awaitable<Result<Admission>> JobManager::AdmitWorker(std::int64_t id, int rank,
                                                           const std::string& token) {
  auto it = jobs_.find(id);
  if (it == jobs_.end() || rank != 0 || it->second->token.empty() || it->second->token != token ||
      it->second->connected) {
    co_return Status::Error("no worker of job " + std::to_string(id) + " rank " +
                            std::to_string(rank) + " is expected with that token");
  }
  it->second->connected = true;
  auto latest = co_await OffThread(pool_, [this, id] { return store_.LatestCheckpoint(id); });
  if (!latest.ok()) co_return latest.status();
  for (const std::string& skipped : latest.value().skipped) {
    store_.AppendLog(id, 0, "daemon", "skipped damaged checkpoint: " + skipped);
  }
  Admission admission;
  admission.spec_toml = jobs_.at(id)->spec_toml;
  std::string reason = "worker pid " + std::to_string(jobs_.at(id)->pid) + " training";
  if (latest.value().checkpoint) {
    admission.resume_step = latest.value().checkpoint->step;
    admission.checkpoint_blob = store::EncodeCheckpoint(*latest.value().checkpoint);
    reason += " from the checkpoint at step " + std::to_string(admission.resume_step);
  }
  auto run = [this, id, reason] { return store_.SetJobState(id, JobState::kRunning, reason); };
  Status s = co_await OffThread(pool_, run);
  if (!s.ok()) co_return s;
  if (auto found = jobs_.find(id); found != jobs_.end()) found->second->state = JobState::kRunning;
  co_return admission;
}

void JobManager::WorkerMetrics(std::int64_t id, int rank,
                               std::span<const train::MetricPoint> points) {
  if (jobs_.count(id) == 0) return;
  store_.AppendMetrics(id, rank, points);
}

asio::awaitable<Status> JobManager::WorkerCheckpoint(std::int64_t id, int rank,
                                                     std::string_view blob) {
  auto it = jobs_.find(id);
  if (it == jobs_.end() || rank != 0) co_return Status::Error("not an active job's worker");
  auto decoded = store::DecodeCheckpoint(blob);
  if (!decoded.ok()) co_return Status::Error("checkpoint refused: " + decoded.status().message());
  const int keep = it->second->config.checkpoint.keep;
  auto save = [this, id, keep, c = std::move(decoded).value()] {
    return store_.SaveCheckpoint(id, c, keep);
  };
  co_return co_await OffThread(pool_, save);
}

void JobManager::WorkerDone(std::int64_t id, int, const std::string& stop, std::int64_t steps) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  it->second->done_stop = stop;
  it->second->steps = steps;
}

asio::awaitable<void> JobManager::OnWorkerExit(std::int64_t id, ProcessExit exit) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) co_return;
  Job& job = *it->second;
  const std::int64_t row = job.worker_row;
  job.pid = 0;
  job.worker_row = 0;
  job.token.clear();
  if (row != 0) {
    co_await OffThread(pool_, [this, row, exit] {
      return store_.RecordWorkerExit(row, exit.exit_status, exit.signal);
    });
  }
  Job& j = *jobs_.at(id);
  const bool finished = exit.signal == 0 && exit.exit_status == 0 &&
                        (j.done_stop == "completed" || j.done_stop == "target");
  std::string reason;
  if (finished) {
    reason = j.done_stop == "target" ? "reached target accuracy at step " + std::to_string(j.steps)
                                     : "completed " + std::to_string(j.steps) + " steps";
    co_await Finish(id, JobState::kSucceeded, reason);
  } else if (j.cancel_requested) {
    reason = "cancelled by uid " + std::to_string(j.cancelled_by);
    co_await Finish(id, JobState::kCancelled, reason);
  } else if (shutting_down_) {
    if (j.state == JobState::kRunning || j.state == JobState::kStarting) {
      co_await OffThread(pool_, [this, id] {
        return store_.SetJobState(id, JobState::kRecovering,
                                  "the daemon stopped; the job resumes at its next start");
      });
    }
    jobs_.erase(id);
  } else if (j.restarts < j.max_restarts) {
    ++j.restarts;
    reason = "restart " + std::to_string(j.restarts) + " of " + std::to_string(j.max_restarts) +
             ": the worker " + DescribeExit(exit) + "; resuming from the newest checkpoint";
    if (j.state != JobState::kRecovering) {
      auto recover = [this, id, reason] {
        return store_.SetJobState(id, JobState::kRecovering, reason);
      };
      co_await OffThread(pool_, recover);
      jobs_.at(id)->state = JobState::kRecovering;
    }
    // A short, growing pause so a worker that dies at once does not spin.
    asio::steady_timer pause(io_, std::chrono::milliseconds(200) * j.restarts);
    co_await pause.async_wait(asio::use_awaitable);
  } else {
    reason = "the worker " + DescribeExit(exit) + " (see dtrain logs " + std::to_string(id) + ")";
    if (j.max_restarts > 0) {
      reason += "; gave up after " + std::to_string(j.max_restarts) + " restarts";
    }
    co_await Finish(id, JobState::kFailed, reason);
  }
  Schedule();
}

asio::awaitable<void> JobManager::Finish(std::int64_t id, store::JobState state,
                                         const std::string& reason) {
  // Everything the worker printed is committed before the job is seen to end.
  auto finish = [this, id, state, reason] {
    store_.AppendLog(id, 0, "daemon", reason);
    Status flushed = store_.Flush();
    Status moved = store_.SetJobState(id, state, reason);
    return moved.ok() ? flushed : moved;
  };
  co_await OffThread(pool_, finish);
  jobs_.erase(id);
}

asio::awaitable<std::optional<Refusal>> JobManager::Cancel(std::int64_t id, uid_t caller) {
  auto record = co_await OffThread(pool_, [this, id] { return store_.GetJob(id); });
  if (!record.ok()) co_return Refusal{"not_found", "no job " + std::to_string(id), {}};
  if (caller != 0 && static_cast<std::int64_t>(caller) != record.value().owner_uid) {
    co_return Refusal{"denied",
                      "job " + std::to_string(id) + " belongs to uid " +
                          std::to_string(record.value().owner_uid) +
                          "; only its owner or root may cancel it",
                      {}};
  }
  auto it = jobs_.find(id);
  if (it == jobs_.end() || store::IsTerminal(record.value().state)) {
    co_return Refusal{"conflict",
                      "job " + std::to_string(id) + " has already ended (" +
                          std::string(store::JobStateName(record.value().state)) + ")",
                      {}};
  }
  Job& job = *it->second;
  job.cancel_requested = true;
  job.cancelled_by = caller;
  if (job.pid == 0) {
    const std::string reason = "cancelled by uid " + std::to_string(caller);
    co_await Finish(id, JobState::kCancelled, reason);
    Schedule();
    co_return std::nullopt;
  }
  if (job.pid > 0 && !job.stop_sent) {
    supervisor_.Stop(job.pid, settings_.grace);
    job.stop_sent = true;
  }
  // The worker's exit finishes the job (a worker still being started is stopped by Start).
  asio::steady_timer tick(io_);
  while (jobs_.count(id) != 0) {
    tick.expires_after(50ms);
    co_await tick.async_wait(asio::use_awaitable);
  }
  co_return std::nullopt;
}

asio::awaitable<void> JobManager::Shutdown() {
  shutting_down_ = true;
  for (auto& [id, job] : jobs_) {
    if (job->pid > 0 && !job->stop_sent) {
      supervisor_.Stop(job->pid, settings_.grace);
      job->stop_sent = true;
    }
  }
  asio::steady_timer tick(io_);
  while (running() > 0) {
    tick.expires_after(50ms);
    co_await tick.async_wait(asio::use_awaitable);
  }
}

}  // namespace dtrain::server
