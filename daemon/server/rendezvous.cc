// JobManager's rendezvous (job_manager.h): each process of an attempt says hello with its token
// and data-plane address, and is admitted once every process has — with the job, the newest
// checkpoint's part for its partition and every process's address.
#include <algorithm>
#include <cmath>

#include "config/job_layout.h"
#include "core/net/auth.h"
#include "daemon/server/active_job.h"
#include "daemon/server/async.h"
#include "daemon/store/checkpoint_partitions.h"

namespace dtrain::server {

using store::JobState;

Admission JobManager::AdmissionFor(const Job& job, int rank) const {
  Admission a = job.admission;
  if (a.resume_step >= 0) {
    const int partition = config::RoleOf(job.config.cluster, rank).partition;
    a.checkpoint_blob = job.checkpoint_parts[static_cast<std::size_t>(partition)];
  }
  return a;
}

asio::awaitable<Result<Admission>> JobManager::AdmitWorker(
    std::int64_t id, int rank, const std::string& token, const std::string& data_host,
    std::uint16_t data_port, std::uint16_t partition_port, bool slurm_task) {
  auto it = jobs_.find(id);
  const auto refused = Status::Error("no worker of job " + std::to_string(id) + " rank " +
                                     std::to_string(rank) + " is expected with that token");
  if (it == jobs_.end() || rank < 0 || rank >= static_cast<int>(it->second->processes.size())) {
    co_return refused;
  }
  Job* job = it->second.get();
  Process& me = job->processes[static_cast<std::size_t>(rank)];
  if (me.token.empty() || !net::TokensEqual(me.token, token) || me.admitted ||
      !job->machine.failure().empty() || (slurm_task && !job->OnSlurm())) {
    co_return refused;
  }
  me.admitted = true;
  me.data_host = data_host;
  me.data_port = data_port;
  me.partition_port = partition_port;
  const std::uint64_t attempt = job->attempt;
  if (job->machine.ready()) {
    Result<Admission> late = co_await AdmitRestarted(id, attempt, rank);
    co_return late;
  }
  // An elastic job's replicas not placed yet are no part of it: they join later (GrowElastic).
  const bool last =
      std::all_of(job->processes.begin(), job->processes.end(), [job](const Process& p) {
        return p.admitted || !job->machine.process(p.rank).started;
      });
  if (last) {
    auto latest = co_await OffThread(pool_, [this, id] { return store_.LatestCheckpoint(id); });
    job = Current(id, attempt);
    if (job == nullptr) co_return refused;
    if (!latest.ok()) {
      FailAttempt(*job, "reading the newest checkpoint: " + latest.status().message());
      co_return latest.status();
    }
    for (const std::string& skipped : latest.value().skipped) {
      store_.AppendLog(id, 0, "daemon", "skipped damaged checkpoint: " + skipped);
    }
    Admission& a = job->admission;
    a.spec_toml = job->spec_toml;
    a.heartbeat_timeout =
        std::chrono::milliseconds(std::llround(job->config.cluster.heartbeat_timeout * 1000.0));
    const config::ClusterConfig& cluster = job->config.cluster;
    for (const Process& p : job->processes) {
      a.peers.push_back({p.rank, config::RoleName(job->config.cluster, p.rank),
                         p.data_host.empty() ? settings_.data_host : p.data_host, p.data_port,
                         p.partition_port});
    }
    a.members = job->PlacedRanks();
    const int workers = cluster.workers;
    std::string reason = std::to_string(workers) + (workers == 1 ? " worker" : " workers");
    if (!a.members.empty()) reason = std::to_string(a.members.size()) + " of " + reason;
    if (cluster.model_parallel > 1) {
      reason += " of " + std::to_string(cluster.model_parallel) + " partitions";
    }
    if (cluster.Shards() > 0) reason += " and " + std::to_string(cluster.Shards()) + " shard(s)";
    reason += " training";
    if (latest.value().checkpoint) {
      Result<std::vector<std::string>> parts =
          store::SplitPartitionCheckpoint(cluster, *latest.value().checkpoint);
      if (!parts.ok()) {
        FailAttempt(*job, "the newest checkpoint: " + parts.status().message());
        co_return parts.status();
      }
      job->checkpoint_parts = std::move(parts).value();
      a.resume_step = latest.value().checkpoint->step;
      job->newest_step = a.resume_step;
      reason += " from the checkpoint at step " + std::to_string(a.resume_step);
    }
    if (!a.members.empty()) reason += std::string("; ") + job->OthersJoin();
    Status s = co_await StoreState(id, JobState::kRunning, reason);
    job = Current(id, attempt);
    if (job == nullptr) co_return refused;
    if (!s.ok()) {
      FailAttempt(*job, s.message());
      co_return s;
    }
    job->state = JobState::kRunning;
    job->machine.Ready();
    job->rendezvous->Set(true);
    // Cores may have freed up meanwhile: it grows (toward workers, or beyond to max_workers).
    if (job->placed_workers < job->config.cluster.MostMembers()) Schedule();
    co_return AdmissionFor(*job, rank);
  }
  co_await job->rendezvous->Wait();
  job = Current(id, attempt);
  if (job == nullptr) co_return refused;
  if (job->machine.ready()) co_return AdmissionFor(*job, rank);
  if (job->machine.failure().empty()) {
    std::string missing;
    for (const Process& p : job->processes) {
      if (!p.admitted && job->machine.process(p.rank).started) missing += (missing.empty() ? "" : ", ") + job->Who(p.rank);
    }
    FailAttempt(*job, "rendezvous: " + missing + " did not connect within " +
                          std::to_string(job->config.cluster.timeout_seconds) + " s");
  }
  co_return Status::Error("the job's rendezvous failed: " + job->machine.failure());
}

}  // namespace dtrain::server
