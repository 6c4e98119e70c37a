#include "daemon/server/job_manager.h"

#include <signal.h>

#include <algorithm>
#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/steady_timer.hpp>
#include <cmath>
#include <cstdio>

#include "config/job_layout.h"
#include "core/net/auth.h"
#include "core/net/host_info.h"
#include "daemon/server/active_job.h"
#include "daemon/server/async.h"
#include "daemon/server/fair_share.h"
#include "daemon/store/checkpoint_partitions.h"

namespace dtrain::server {
namespace {

using store::JobState;
using namespace std::chrono_literals;

}  // namespace

std::string DescribeExit(const ProcessExit& exit) {
  if (exit.signal != 0) {
    const char* name = ::sigabbrev_np(exit.signal);
    return "killed by signal " +
           (name != nullptr ? "SIG" + std::string(name) : std::to_string(exit.signal));
  }
  return "exited with status " + std::to_string(exit.exit_status);
}

JobManager::JobManager(asio::io_context& io, asio::thread_pool& pool, store::Store& store,
                       Supervisor& supervisor, ManagerSettings settings)
    : io_(io),
      pool_(pool),
      store_(store),
      supervisor_(supervisor),
      settings_(std::move(settings)) {}

JobManager::~JobManager() = default;

int JobManager::running() const {
  return static_cast<int>(
      std::count_if(jobs_.begin(), jobs_.end(), [](const auto& j) { return j.second->active; }));
}

int JobManager::queued() const { return static_cast<int>(jobs_.size()) - running(); }

int JobManager::CoresInUse() const {
  int used = 0;
  for (const auto& [id, job] : jobs_) used += job->active ? job->cores : 0;
  return used;
}

std::optional<LiveJob> JobManager::Live(std::int64_t id) const {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return std::nullopt;
  const Job& job = *it->second;
  return LiveJob{job.pending_reason,          job.machine.restarts(),
                 job.config.train.batch_size, config::LeadRank(job.config.cluster),
                 job.config.train.epochs,     job.config.train.steps};
}

void JobManager::Reload(const ManagerSettings& settings) {
  settings_.max_jobs = settings.max_jobs;
  settings_.cores = settings.cores;
  settings_.grace = settings.grace;
  settings_.max_restarts = settings.max_restarts;
  settings_.limits = settings.limits;
  settings_.log_quota = settings.log_quota;  // from each job's next attempt
  user_logs_.clear();                        // re-read with the new quota at the next attempt
  Schedule();
}

Placed JobManager::Place(Job& job, int workers) const {
  if (job.OnSlurm()) return PlaceOnSlurm(job);
  std::vector<NodeCapacity> nodes = {{settings_.node_name, "", settings_.cores, true}};
  if (settings_.nodes) {
    for (NodeCapacity& n : settings_.nodes()) nodes.push_back(std::move(n));
  }
  config::ClusterConfig cluster = job.config.cluster;
  cluster.workers = workers;
  cluster.max_workers = 0;  // ranks 0 .. workers - 1 only
  Placed placed = PlaceJob(cluster, job.config.threads, nodes);
  if (placed.ok()) {
    const int local = static_cast<int>(std::count(
        placed.nodes.begin(), placed.nodes.begin() + cluster.Trainers(), settings_.node_name));
    job.cores = JobCores(job.config, settings_.cores, local);
  }
  return placed;
}

Placed JobManager::PlaceToStart(Job& job, int free_cores) const {
  const config::ClusterConfig& cluster = job.config.cluster;
  job.placed_workers = cluster.workers;
  Placed whole = Place(job, cluster.workers);
  if (job.OnSlurm()) {
    // Slurm grants the first allocation with min_workers replicas, the others one by one
    // (slurm_growth.cc).
    if (cluster.Elastic()) job.placed_workers = cluster.FewestMembers();
    return whole;
  }
  if (!cluster.Elastic() || !whole.error.empty() || (whole.ok() && job.cores <= free_cores)) {
    return whole;
  }
  Placed fewer;
  const int workers = MostThatFit(cluster.workers - 1, cluster.FewestMembers(), [&](int n) {
    fewer = Place(job, n);
    return fewer.ok() && job.cores <= free_cores;
  });
  if (workers == 0) {
    Place(job, cluster.workers);  // the whole job's cores, for the reason it waits
    return whole;
  }
  job.placed_workers = workers;
  return fewer;
}

asio::awaitable<void> JobManager::FailUnplaceable(std::int64_t id, std::string why) {
  co_await Finish(id, JobState::kFailed, why);
  Schedule();
}

asio::awaitable<void> JobManager::ScheduleLater() {
  asio::steady_timer pause(io_, std::chrono::milliseconds(500));
  co_await pause.async_wait(asio::use_awaitable);
  schedule_later_ = false;
  Schedule();
}

void JobManager::Schedule() {
  if (shutting_down_) return;
  std::vector<Job*> waiting;
  for (auto& [id, job] : jobs_) {
    if (!job->active && !job->machine.cancel_requested() &&
        (job->state == JobState::kQueued || job->state == JobState::kRecovering)) {
      waiting.push_back(job.get());
    }
  }
  // fair_share.h decides the order, again after each start (the starter's share grew).
  UsageByUser usage;
  for (const auto& [id, job] : jobs_) {
    if (!job->active) continue;
    usage[job->owner.uid].jobs += 1;
    usage[job->owner.uid].cores += job->cores;
  }
  const auto next_first = [&usage](const Job* a, const Job* b) {
    return StartsBefore({a->id, a->priority, a->owner.uid}, {b->id, b->priority, b->owner.uid},
                        usage);
  };
  // Strict order within the queue: a job that does not fit holds back those behind it.
  for (std::size_t i = 0; i < waiting.size(); ++i) {
    std::iter_swap(waiting.begin() + static_cast<std::ptrdiff_t>(i),
                   std::min_element(waiting.begin() + static_cast<std::ptrdiff_t>(i), waiting.end(),
                                    next_first));
    Job* job = waiting[i];
    if (std::string over = OverUserShare(job->owner.uid, job->cores, usage, settings_.limits);
        !over.empty()) {
      job->pending_reason = std::move(over);  // its owner's share, not the host: others go on
      continue;
    }
    const int free_cores = settings_.cores - CoresInUse();
    const Placed placed = PlaceToStart(*job, free_cores);
    if (!placed.error.empty()) {
      job->pending_reason.clear();
      job->active = true;  // Finish takes it off the queue
      asio::co_spawn(io_, FailUnplaceable(job->id, placed.error), asio::detached);
      continue;
    }
    if (!placed.wait.empty()) {
      job->pending_reason = placed.wait;
      if (!schedule_later_) {
        schedule_later_ = true;
        asio::co_spawn(io_, ScheduleLater(), asio::detached);
      }
    } else if (running() >= settings_.max_jobs) {
      job->pending_reason =
          "waiting for a job slot (max_jobs = " + std::to_string(settings_.max_jobs) + ")";
    } else if (job->cores > free_cores) {
      job->pending_reason = "waiting for cores (needs " + std::to_string(job->cores) + ", " +
                            std::to_string(free_cores) + " free)";
    } else {
      job->pending_reason.clear();
      job->placement = placed.nodes;
      job->active = true;  // its cores are taken from now on
      usage[job->owner.uid].jobs += 1;
      usage[job->owner.uid].cores += job->cores;
      asio::co_spawn(io_, Start(job->id), asio::detached);
      continue;
    }
    for (std::size_t j = i + 1; j < waiting.size(); ++j) {
      waiting[j]->pending_reason = "waiting behind job " + std::to_string(job->id);
    }
    return;  // the waiting job keeps its claim on what frees up: no running job grows
  }
  for (auto& [id, job] : jobs_) GrowElastic(*job, usage);
}

asio::awaitable<void> JobManager::Start(std::int64_t id) {
  Job* job = jobs_.at(id).get();
  if (job->state == JobState::kQueued) {
    Status s = co_await StoreState(id, JobState::kStarting, "starting the worker processes");
    job = jobs_.at(id).get();
    if (!s.ok()) {
      job->active = false;
      co_await Finish(id, JobState::kFailed, s.message());
      co_return;
    }
    job->state = JobState::kStarting;
  }
  if (const uid_t uid = job->owner.uid;
      settings_.limits.log_quota_per_user > 0 && !user_logs_.contains(uid)) {
    co_await ChargeUserLogs(uid);
    job = jobs_.at(id).get();
  }
  const int count = job->config.cluster.Processes();
  const std::uint64_t attempt = ++job->attempt;
  job->processes.assign(static_cast<std::size_t>(count), Process{});
  job->machine.Begin(count);
  job->rejoining.clear();
  job->regroup.reset();
  if (job->config.cluster.Elastic()) {
    const config::ClusterConfig& cluster = job->config.cluster;
    // On a parameter server the shard holds the newest step's state: its newest member leads.
    job->regroup.emplace(cluster.workers, cluster.FewestMembers(), job->PlacedRanks(),
                         cluster.MostMembers(), cluster.SumsOnShards());
  }
  job->regroup_closed.reset();
  job->regroup_notices.clear();
  job->newest_step = 0;
  job->regroup_finished = false;
  job->checkpoint_assembly.Clear();
  job->checkpoint_stored.clear();
  job->log_quota.emplace(settings_.log_quota);
  job->admission = Admission{};
  // The attempt's data-plane token: fresh randomness, which only this daemon and the attempt's
  // processes (told it over their channels in the rendezvous) ever hold. Nothing derives it, so
  // it is never shared with another daemon's job or another attempt of this one.
  job->admission.data_token = net::RandomToken();
  job->slurm = Job::SlurmAllocation{};
  if (job->OnSlurm()) {
    Status granted = co_await AllocateOnSlurm(id, attempt);
    job = Current(id, attempt);
    if (job == nullptr) co_return;
    if (!granted.ok() || job->machine.cancel_requested() || shutting_down_) {
      co_await EndSlurmAttempt(id, attempt);
      job = jobs_.at(id).get();
      job->active = false;
      const std::string cancelled =
          "cancelled by uid " + std::to_string(job->machine.cancelled_by());
      if (job->machine.cancel_requested()) {
        co_await Finish(id, JobState::kCancelled, cancelled);
      } else if (shutting_down_) {
        jobs_.erase(id);  // still starting: it starts again with the next daemon
      } else {
        co_await Finish(id, JobState::kFailed, granted.message());
      }
      Schedule();
      co_return;
    }
  }
  job->rendezvous.emplace(io_, std::chrono::milliseconds(
                                   static_cast<long>(job->config.cluster.timeout_seconds * 1000)));
  // Recorded below: not the ranks an elastic job grows by meanwhile, which GrowElastic records.
  std::vector<int> spawned;
  for (int rank = 0; rank < count; ++rank) {
    Process& p = job->processes[static_cast<std::size_t>(rank)];
    p.rank = rank;
    if (rank >= job->placed_workers && rank < job->config.cluster.MostMembers()) {
      job->machine.Unstarted(rank);  // it joins once there are cores for it (GrowElastic)
      continue;
    }
    p.token = net::RandomToken();
    const auto r = static_cast<std::size_t>(rank);
    if (r < job->placement.size() && job->placement[r] != settings_.node_name) {
      p.node = job->placement[r];
    }
    if (Status started = SpawnProcess(id, attempt, p); !started.ok()) {
      FailAttempt(*job, "cannot start " + job->Who(rank) + ": " + started.message());
      break;
    }
    spawned.push_back(rank);
    job->machine.Spawned(rank);
  }
  if (job->machine.live() == 0) {
    job->active = false;
    co_await Finish(id, JobState::kFailed, job->machine.failure());
    Schedule();
    co_return;
  }
  if (shutting_down_ || job->machine.cancel_requested()) {
    StopProcesses(*job, settings_.grace);  // asked meanwhile
  }
  if (const int workers = job->config.cluster.workers; job->placed_workers < workers) {
    NoteEvents(id, {"started with " + std::to_string(job->placed_workers) + " of " +
                    std::to_string(workers) + " workers; " + job->OthersJoin()});
  }
  if (job->OnSlurm() && MayStillGrow(*job))
    asio::co_spawn(io_, GrowOnSlurm(id, attempt), asio::detached);
  for (const int rank : spawned) {
    job = Current(id, attempt);
    if (job == nullptr) co_return;
    const Process& p = job->processes[static_cast<std::size_t>(rank)];
    if (p.pid > 0) co_await RecordStart(id, attempt, rank, p.pid);
  }
}

Status JobManager::SpawnProcess(std::int64_t id, std::uint64_t attempt, Process& p) {
  const Job& job = *jobs_.at(id);
  const int rank = p.rank;
  Supervisor::LineHandler on_line = [this, id, rank](std::string_view stream,
                                                     std::string_view line) {
    OnLine(id, rank, stream, line);
  };
  Supervisor::ExitHandler on_exit = [this, id, attempt, rank](ProcessExit exit) {
    asio::co_spawn(io_, OnWorkerExit(id, attempt, rank, exit), asio::detached);
  };
  const Result<pid_t> pid = [&]() -> Result<pid_t> {
    if (!job.OnSlurm()) {
      return launcher_.Start({id, rank, p.node, p.token, job.owner, job.config.memory_limit},
                             std::move(on_line), std::move(on_exit));
    }
    Result<Launch> task = SlurmTaskLaunch(job, p);
    if (!task.ok()) return task.status();
    return supervisor_.Spawn(task.value(), std::move(on_line), std::move(on_exit));
  }();
  if (!pid.ok()) return pid.status();
  p.pid = pid.value();
  p.started = store::WallClock();
  return Status::Ok();
}

void JobManager::OnLine(std::int64_t id, int rank, std::string_view stream, std::string_view line) {
  if (settings_.on_line) settings_.on_line(id, rank, stream, line);
  auto it = jobs_.find(id);
  if (it == jobs_.end() || !it->second->log_quota) return;
  // The attempt's quota, then its owner's across all their jobs ([limits] log_quota_per_user).
  LogQuota* quota = &*it->second->log_quota;
  LogQuota::Verdict verdict = quota->Admit(line.size());
  if (const auto user = user_logs_.find(it->second->owner.uid);
      verdict == LogQuota::kKeep && user != user_logs_.end()) {
    quota = &user->second;
    verdict = quota->Admit(line.size());
  }
  switch (verdict) {
    case LogQuota::kKeep:
      store_.AppendLog(id, rank, stream, line);
      break;
    case LogQuota::kNote:
      store_.AppendLog(id, rank, "daemon", quota->Note());
      break;
    case LogQuota::kDropped:
      break;
  }
}

asio::awaitable<void> JobManager::RecordStart(std::int64_t id, std::uint64_t attempt, int rank,
                                              pid_t pid) {
  Job* job = Current(id, attempt);
  if (job == nullptr) co_return;
  const Process& p = job->processes[static_cast<std::size_t>(rank)];
  const char* role = config::RoleName(job->config.cluster, rank);
  // A peer's worker is recorded under the peer's name, with its local stand-in's pid.
  const std::string host = !p.node.empty()                ? p.node
                           : !settings_.node_name.empty() ? settings_.node_name
                                                          : net::LocalHostName();
  const ProcessKey key{id, rank, pid};
  unrecorded_starts_[key];  // its exit, if seen before the row is stored, waits there
  auto row = std::make_shared<std::int64_t>(0);
  std::function<Status()> write = [this, id, rank, role, host, pid, at = p.started, row] {
    Result<std::int64_t> stored = store_.RecordWorkerStart(id, rank, role, host, pid, at);
    if (stored.ok()) *row = stored.value();
    return stored.status();
  };
  Status s = co_await OffThread(pool_, write);
  if (s.code() == StatusCode::kNoSpace) {
    asio::co_spawn(io_, RecordStartLater(key, attempt, std::move(write), row, std::move(s)),
                   asio::detached);
  } else if (s.ok()) {
    co_await TakeRow(key, attempt, *row);
  } else {
    unrecorded_starts_.erase(key);
    Warn(s.message());
  }
}

asio::awaitable<void> JobManager::RecordStartLater(ProcessKey key, std::uint64_t attempt,
                                                   std::function<Status()> write,
                                                   std::shared_ptr<std::int64_t> row,
                                                   Status no_space) {
  Status s = co_await RetryUntilStored(write, std::move(no_space));
  if (s.ok()) {
    Warn("job " + std::to_string(key.job) + ": the start of worker " + std::to_string(key.rank) +
         " (pid " + std::to_string(key.pid) + ") is stored");
    co_await TakeRow(key, attempt, *row);
    co_return;
  }
  if (s.code() != StatusCode::kNoSpace) Warn(s.message());
  unrecorded_starts_.erase(key);
}

asio::awaitable<void> JobManager::TakeRow(ProcessKey key, std::uint64_t attempt, std::int64_t row) {
  std::optional<ExitSeen> seen;
  if (auto it = unrecorded_starts_.find(key); it != unrecorded_starts_.end()) {
    seen = it->second;
    unrecorded_starts_.erase(it);
  }
  if (Job* job = Current(key.job, attempt); job != nullptr) {
    Process& p = job->processes[static_cast<std::size_t>(key.rank)];
    if (p.pid == key.pid) {  // not replaced meanwhile
      p.row = row;
      // An exit the attempt counted before its row existed, but not yet passed on.
      if (const ProcessState& state = job->machine.process(key.rank); state.exited && !seen) {
        seen = ExitSeen{state.exit, store::WallClock()};
      }
    }
  }
  if (seen) co_await RecordExit(row, seen->exit, seen->at);
}

asio::awaitable<void> JobManager::RecordProcessExit(ProcessKey key, std::int64_t row,
                                                    ProcessExit exit, double at) {
  if (row != 0) {
    co_await RecordExit(row, exit, at);
  } else if (auto it = unrecorded_starts_.find(key); it != unrecorded_starts_.end()) {
    it->second = ExitSeen{exit, at};  // TakeRow records it
  }
}

void JobManager::FailAttempt(Job& job, const std::string& why) {
  const FailVerdict verdict = job.machine.Fail(why, job.state == JobState::kRecovering);
  if (!verdict.first) return;
  store_.AppendLog(job.id, 0, "daemon", why);
  if (job.rendezvous) job.rendezvous->Abandon();
  job.AbandonRegroups();
  // `dtrain status` says why at once.
  if (verdict.recovering) {
    job.state = JobState::kRecovering;
    asio::co_spawn(io_, MarkRecovering(job.id, *verdict.recovering), asio::detached);
  }
  // The survivors of a failed attempt cannot finish a step their peers will not share, and the
  // next attempt starts from the newest checkpoint: they get a short grace only.
  StopProcesses(job, std::min(settings_.grace, kFailedAttemptGrace));
}

asio::awaitable<void> JobManager::MarkRecovering(std::int64_t id, std::string reason) {
  if (Status s = co_await StoreState(id, JobState::kRecovering, std::move(reason)); !s.ok()) {
    Warn(s.message());
  }
}

void JobManager::StopProcesses(Job& job, std::chrono::milliseconds grace) {
  if (job.slurm.salloc > 0) supervisor_.Stop(job.slurm.salloc, grace);  // still waiting for Slurm
  for (int rank : job.machine.TakeStops()) {
    supervisor_.Stop(job.processes[static_cast<std::size_t>(rank)].pid, grace);
  }
}

JobManager::Job* JobManager::Current(std::int64_t id, std::uint64_t attempt) {
  auto it = jobs_.find(id);
  return it == jobs_.end() || it->second->attempt != attempt ? nullptr : it->second.get();
}

std::pair<JobManager::Job*, JobManager::Process*> JobManager::FindProcess(std::int64_t id,
                                                                          int rank) {
  auto it = jobs_.find(id);
  if (it == jobs_.end() || rank < 0 || rank >= static_cast<int>(it->second->processes.size())) {
    return {nullptr, nullptr};
  }
  return {it->second.get(), &it->second->processes[static_cast<std::size_t>(rank)]};
}

void JobManager::WorkerSilent(std::int64_t id, int rank, const std::string& token,
                              std::chrono::milliseconds silence) {
  auto [found, process] = FindProcess(id, rank);
  if (found == nullptr) return;
  Job& job = *found;
  Process& p = *process;
  if (job.machine.process(rank).exited || p.pid <= 0 || !net::TokensEqual(p.token, token)) {
    return;  // not that process
  }
  // Stopped or hung: a SIGTERM would wait in vain.
  supervisor_.Stop(p.pid, std::chrono::milliseconds(0));
  const config::LostProcess loss = job.machine.Silenced(rank);
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.1f", static_cast<double>(silence.count()) / 1000.0);
  std::string why = job.Who(rank) + " sent nothing for ";
  why += seconds;
  why += " s (cluster.heartbeat_timeout is ";
  std::snprintf(seconds, sizeof seconds, "%g", job.config.cluster.heartbeat_timeout);
  why += seconds;
  why += " s): killed";
  if (loss == config::LostProcess::kCarryOn) {
    // The job goes on without it (its link breaks, and the coordinator hands its units on).
    store_.AppendLog(job.id, rank, "daemon", why + "; the job goes on without it");
    return;
  }
  if (job.regroup && job.machine.ready()) {
    // Its exit is the loss: the others regroup without it (elastic_regroup.cc).
    store_.AppendLog(job.id, rank, "daemon", why + "; the others regroup without it");
    return;
  }
  FailAttempt(job, why);
}

void JobManager::WorkerMetrics(std::int64_t id, int rank,
                               std::span<const train::MetricPoint> points) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  for (const train::MetricPoint& p : points) {
    it->second->newest_step = std::max(it->second->newest_step, p.step);
  }
  store_.AppendMetrics(id, rank, points);
}

asio::awaitable<Status> JobManager::WorkerCheckpoint(std::int64_t id, int rank,
                                                     std::string_view blob) {
  auto it = jobs_.find(id);
  const Status refused = Status::Error("not an active job's worker");
  if (it == jobs_.end()) co_return refused;
  const config::ClusterConfig cluster = it->second->config.cluster;
  const config::ProcessRole role = config::RoleOf(cluster, rank);
  if (!it->second->WritesCheckpoints(rank)) co_return refused;
  auto decoded = store::DecodeCheckpoint(blob);
  if (!decoded.ok()) co_return Status::Error("checkpoint refused: " + decoded.status().message());
  const int keep = it->second->config.checkpoint.keep;
  const std::uint64_t attempt = it->second->attempt;
  if (cluster.model_parallel == 1) {
    Status saved = co_await SaveCheckpoint(id, attempt, rank, keep, decoded.value());
    co_return saved;
  }
  // Each partition's part waits here until the last one has come and the whole is stored.
  Job& job = *it->second;
  const std::int64_t step = decoded.value().step;
  std::optional<std::vector<store::CheckpointData>> parts =
      job.checkpoint_assembly.Add(role.partition, std::move(decoded).value());
  const auto deadline = std::chrono::milliseconds(std::llround(cluster.timeout_seconds * 1000.0));
  Completion<Status> stored = job.checkpoint_stored.try_emplace(step, io_, deadline).first->second;
  if (!parts) {
    std::optional<Status> outcome = co_await stored.Wait();
    if (outcome) co_return *outcome;
    co_return Status::Error("the other partitions' parts of the checkpoint at step " +
                            std::to_string(step) + " did not come within " +
                            std::to_string(cluster.timeout_seconds) + " s");
  }
  job.checkpoint_stored.erase(step);
  Result<store::CheckpointData> merged =
      store::JoinPartitionCheckpoints(cluster, std::move(*parts));
  Status outcome = merged.status();
  if (merged.ok()) outcome = co_await SaveCheckpoint(id, attempt, rank, keep, merged.value());
  stored.Set(outcome);
  co_return outcome;
}

asio::awaitable<Status> JobManager::WorkerBestModel(std::int64_t id, int rank,
                                                    std::string_view payload) {
  auto it = jobs_.find(id);
  if (it == jobs_.end() || !it->second->WritesCheckpoints(rank)) {
    co_return Status::Error("not an active job's worker");
  }
  const std::optional<train::EarlyStoppingMetric> metric =
      config::BestModelMetric(it->second->config);
  if (!metric) co_return Status::Error("the job keeps no best model");
  Result<store::BestModelFrame> frame = store::DecodeBestModelFrame(payload);
  if (!frame.ok()) co_return Status::Error("best model refused: " + frame.status().message());
  const std::uint64_t attempt = it->second->attempt;
  const store::BestModelInfo best{.step = frame.value().model.step,
                                  .metric = std::string(train::EarlyStoppingMetricName(*metric)),
                                  .value = frame.value().value};
  auto save = [this, id, best, model = std::move(frame.value().model)] {
    return store_.SaveBestModel(id, best, store::ViewOf(model));
  };
  Status saved = co_await OffThread(pool_, save);
  if (Job* job = Current(id, attempt); !saved.ok() && job != nullptr) {
    FailAttempt(*job,
                job->Who(rank) + " sent a best model that could not be stored: " + saved.message());
  }
  co_return saved;
}

asio::awaitable<Status> JobManager::WorkerClassReport(std::int64_t id, int rank, std::int64_t step,
                                                      std::string confusion_rows) {
  auto it = jobs_.find(id);
  if (it == jobs_.end() || !it->second->WritesCheckpoints(rank)) {
    co_return Status::Error("not an active job's worker");
  }
  Result<train::ClassReport> report = train::ClassReportOfRows(confusion_rows);
  if (!report.ok() || step < 0) {
    co_return Status::Error("per-class report refused: " +
                            (report.ok() ? std::string("no step") : report.status().message()));
  }
  auto save = [this, id, step, r = std::move(report).value()] {
    return store_.SaveClassReport(id, step, r);
  };
  co_return co_await OffThread(pool_, save);
}

asio::awaitable<Status> JobManager::SaveCheckpoint(std::int64_t id, std::uint64_t attempt, int rank,
                                                   int keep, store::CheckpointData& checkpoint) {
  auto save = [this, id, keep, c = std::move(checkpoint)] {
    return store_.SaveCheckpoint(id, c, keep);
  };
  Status saved = co_await OffThread(pool_, save);
  if (Job* job = Current(id, attempt); !saved.ok() && job != nullptr) {
    // The worker stops on this too; the job's reason then names the cause (a full disk: the
    // transaction rolled back and the previous checkpoint stays), not just an exit status.
    FailAttempt(*job,
                job->Who(rank) + " sent a checkpoint that could not be stored: " + saved.message());
  }
  co_return saved;
}

void JobManager::WorkerDone(std::int64_t id, int rank, const std::string& stop, std::int64_t steps,
                            const std::string& error, const std::string& reason) {
  auto [job, process] = FindProcess(id, rank);
  if (job == nullptr) return;
  const std::optional<worker::WorkerStop> said = worker::ParseWorkerStop(stop);
  for (int r : job->machine.Done(rank, said, steps, reason, job->Who(rank) + ": " + error)) {
    supervisor_.Stop(job->processes[static_cast<std::size_t>(r)].pid, settings_.grace);
  }
  if (job->regroup && !job->regroup_finished &&
      (said == worker::WorkerStop::kCompleted || said == worker::WorkerStop::kTarget) &&
      std::ranges::binary_search(job->regroup->members(), rank)) {
    FinishElastic(*job);
  }
}

asio::awaitable<void> JobManager::OnWorkerExit(std::int64_t id, std::uint64_t attempt, int rank,
                                               ProcessExit exit) {
  const double exited_at = store::WallClock();
  Job* job = Current(id, attempt);
  if (job == nullptr) co_return;
  const ProcessKey key{id, rank, job->processes[static_cast<std::size_t>(rank)].pid};
  job->machine.Exited(rank, exit);
  const AttemptMachine& machine = job->machine;
  bool wanted = true;
  if (job->regroup && machine.ready() && !machine.process(rank).ended_well &&
      machine.failure().empty() && !machine.cancel_requested() && !machine.shutting_down()) {
    // Elastic: the others regroup without it, and it is replaced while restarts last, unless
    // they are cluster.workers still.
    wanted = LoseElasticReplica(*job, rank, DescribeExit(exit));
  }
  if (wanted && job->machine.RestartsAlone(rank) && !job->regroup_finished) {
    // Async: the others go on; new processes take this replica's place among the shards.
    // Elastic: a new process takes its rank and joins the others' ring.
    const bool handled = co_await ReplaceReplica(id, attempt, rank, exited_at);
    if (handled) co_return;
    job = Current(id, attempt);
    if (job == nullptr) co_return;
  }
  if (job->machine.WaitsForBlame(rank)) {
    asio::steady_timer blame(io_, kBlameGrace);
    co_await blame.async_wait(asio::use_awaitable);
    job = Current(id, attempt);
    if (job == nullptr) co_return;
  }
  const std::int64_t row = job->processes[static_cast<std::size_t>(rank)].row;
  const ExitCount counted = job->machine.CountExit(rank);  // the last exit decides the attempt
  if (counted.loss == ExitCount::Loss::kCarryOn) {
    store_.AppendLog(job->id, rank, "daemon",
                     job->Who(rank) + " " + DescribeExit(exit) + "; the job goes on without it");
    // Not the last process: the attempt's end would cancel every allocation anyway.
    if (job->OnSlurm() && !counted.last) {
      asio::co_spawn(io_, ReleaseSlurmReplica(id, attempt, rank), asio::detached);
    }
  } else if (counted.loss == ExitCount::Loss::kFailsAttempt) {
    FailAttempt(*job, job->Who(rank) + " " + DescribeExit(exit));
  }
  if (!job->machine.ready() && job->rendezvous) job->rendezvous->Abandon();  // admitted ones stop
  co_await RecordProcessExit(key, row, exit, exited_at);
  job = Current(id, attempt);
  if (!counted.last || job == nullptr) co_return;
  if (job->OnSlurm()) {
    co_await EndSlurmAttempt(id, attempt);
    job = Current(id, attempt);
    if (job == nullptr) co_return;
  }
  Job& j = *job;
  j.active = false;
  j.rendezvous.reset();
  j.AbandonRegroups();
  if (j.log_quota && j.log_quota->dropped_lines() > 0) {
    store_.AppendLog(id, 0, "daemon", j.log_quota->SummaryLine());
  }
  const Outcome outcome = j.machine.Decide();
  switch (outcome.kind) {
    case Outcome::Kind::kSucceeded:
      co_await Finish(id, JobState::kSucceeded, outcome.reason);
      break;
    case Outcome::Kind::kCancelled:
      co_await Finish(id, JobState::kCancelled, outcome.reason);
      break;
    case Outcome::Kind::kLeftForNextStart:
      if (j.state == JobState::kRunning || j.state == JobState::kStarting) {
        // Unstored, it is "running" to the next start, which recovers it all the same.
        (void)co_await StoreState(id, JobState::kRecovering,
                                  "the daemon stopped; the job resumes at its next start");
      }
      jobs_.erase(id);
      break;
    case Outcome::Kind::kRestart: {
      if (j.state != JobState::kRecovering) {  // FailAttempt marks it as a rule
        j.state = JobState::kRecovering;
        co_await MarkRecovering(id, outcome.reason);
      } else {
        store_.AppendLog(id, 0, "daemon", outcome.reason);
      }
      asio::steady_timer pause(io_, outcome.pause);
      co_await pause.async_wait(asio::use_awaitable);
      break;
    }
    case Outcome::Kind::kFailed:
      co_await Finish(id, JobState::kFailed, outcome.reason);
      break;
  }
  Schedule();
}

asio::awaitable<void> JobManager::Finish(std::int64_t id, store::JobState state,
                                         const std::string& reason) {
  // Everything the worker printed is committed before the job is seen to end (rows the disk had
  // no room for were dropped: the daemon's log counts them, and the end goes on).
  auto flush = [this, id, reason] {
    store_.AppendLog(id, 0, "daemon", reason);
    return store_.Flush();
  };
  // Named: see async.h on GCC 12 and temporaries.
  if (Status flushed = co_await OffThread(pool_, flush); !flushed.ok()) {
    Warn("at the end of job " + std::to_string(id) + ": " + flushed.message());
  }
  auto ended = [this, id] {
    if (on_end_) on_end_(id);
  };
  if (Status s = co_await StoreState(id, state, reason, ended); !s.ok()) Warn(s.message());
  jobs_.erase(id);
}

asio::awaitable<Status> JobManager::StoreState(std::int64_t id, JobState to, std::string reason,
                                               std::function<void()> stored) {
  if (!Queue(id, {to, std::move(reason), store::WallClock(), std::move(stored), false})) {
    co_return Status::Ok();  // stored after the earlier ones, by their writer
  }
  co_return co_await StoreQueue(id);
}

asio::awaitable<void> JobManager::StoreEvent(std::int64_t id, std::string event, bool sets_reason) {
  if (Queue(id, {std::nullopt, std::move(event), store::WallClock(), {}, sets_reason})) {
    co_await StoreQueueWarning(id);
  }
}

bool JobManager::Queue(std::int64_t id, JobEvent event) {
  std::deque<JobEvent>& queue = unstored_events_[id];
  queue.push_back(std::move(event));
  return queue.size() == 1;
}

asio::awaitable<Status> JobManager::StoreQueue(std::int64_t id) {
  StoredEvents result = co_await StoreQueuedEvents(id);
  if (!result.no_space.ok()) {
    asio::co_spawn(io_, StoreEventsLater(id, std::move(result.no_space)), asio::detached);
  }
  co_return result.first;
}

asio::awaitable<void> JobManager::StoreQueueWarning(std::int64_t id) {
  if (Status s = co_await StoreQueue(id); !s.ok()) Warn(s.message());
}

asio::awaitable<JobManager::StoredEvents> JobManager::StoreQueuedEvents(std::int64_t id) {
  // One writer at a time per job: whoever found its queue empty, or StoreEventsLater.
  StoredEvents out;
  for (bool first = true;; first = false) {
    std::deque<JobEvent>& queue = unstored_events_[id];
    if (queue.empty()) {
      unstored_events_.erase(id);
      co_return out;
    }
    JobEvent event = queue.front();
    Status s = co_await OffThread(pool_, [this, id, &event] {
      if (event.to) return store_.SetJobState(id, *event.to, event.reason, event.at);
      return event.sets_reason ? store_.NoteReason(id, event.reason, event.at)
                               : store_.NoteEvent(id, event.reason, event.at);
    });
    if (s.code() == StatusCode::kNoSpace) {
      out.no_space = std::move(s);
      co_return out;
    }
    unstored_events_[id].pop_front();
    if (s.ok()) {
      if (event.stored) event.stored();
    } else if (first) {
      out.first = std::move(s);
    } else {
      Warn("a record stored late was refused: " + s.message());
    }
  }
}

asio::awaitable<void> JobManager::StoreEventsLater(std::int64_t id, Status no_space) {
  const std::string job = "job " + std::to_string(id);
  Warn(no_space.message() +
       "; its state changes and events wait, and are tried again until stored");
  for (auto wait = kStoreRetryFirst; co_await AwaitRetry(wait);) {
    StoredEvents result = co_await StoreQueuedEvents(id);
    if (result.no_space.ok()) {
      Warn(job + ": its state changes and events are stored");
      co_return;
    }
  }
  Warn(job + ": state changes and events not stored before the daemon stopped (its next start " +
       "reconciles it)");
}

asio::awaitable<void> JobManager::RecordExit(std::int64_t row, ProcessExit exit, double at) {
  std::function<Status()> write = [this, row, exit, at] {
    return store_.RecordWorkerExit(row, exit.exit_status, exit.signal, at);
  };
  Status s = co_await OffThread(pool_, write);
  if (s.code() == StatusCode::kNoSpace) {
    asio::co_spawn(io_, RecordExitLater(row, std::move(write), std::move(s)), asio::detached);
  } else if (!s.ok()) {
    Warn(s.message());
  }
}

asio::awaitable<void> JobManager::RecordExitLater(std::int64_t row, std::function<Status()> write,
                                                  Status no_space) {
  Status s = co_await RetryUntilStored(write, std::move(no_space));
  if (s.code() == StatusCode::kNoSpace) co_return;  // the daemon stops: its next start reconciles
  Warn(s.ok() ? "worker record " + std::to_string(row) + ": its exit is stored" : s.message());
}

asio::awaitable<bool> JobManager::AwaitRetry(std::chrono::milliseconds& wait) {
  if (shutting_down_) co_return false;
  asio::steady_timer pause(io_, wait);
  co_await pause.async_wait(asio::use_awaitable);
  wait = std::min(wait * 2, kStoreRetryMost);
  co_return !shutting_down_;
}

asio::awaitable<Status> JobManager::RetryUntilStored(const std::function<Status()>& write,
                                                     Status no_space) {
  Warn(no_space.message() + "; tried again until stored");
  for (auto wait = kStoreRetryFirst; co_await AwaitRetry(wait);) {
    Status s = co_await OffThread(pool_, write);
    if (s.code() != StatusCode::kNoSpace) co_return s;
  }
  co_return no_space;
}

void JobManager::Warn(std::string_view message) const {
  if (settings_.warn) settings_.warn(message);
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
  job.machine.Cancel(caller);
  if (!job.active) {
    const std::string reason = "cancelled by uid " + std::to_string(caller);
    co_await Finish(id, JobState::kCancelled, reason);
    Schedule();
    co_return std::nullopt;
  }
  StopProcesses(job, settings_.grace);
  // The last process's exit finishes the job (one still being started is stopped by Start).
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
    job->machine.Shutdown();
    StopProcesses(*job, settings_.grace);
  }
  asio::steady_timer tick(io_);
  while (running() > 0) {
    tick.expires_after(50ms);
    co_await tick.async_wait(asio::use_awaitable);
  }
}

}  // namespace dtrain::server
