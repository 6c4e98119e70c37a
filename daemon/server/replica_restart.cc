// Async jobs restart a failed replica while the others go on: its processes (one, or with model
// parallelism its K partitions) are stopped, replaced by new ones of the same attempt, admitted
// together and resumed from the newest checkpoint, rejoining their shards. An elastic job's
// replacement is admitted at once, as a joiner: it takes a member's state when its regroup round
// completes (elastic_regroup.cc), not a checkpoint.
#include <algorithm>
#include <cmath>

#include "core/net/auth.h"
#include "daemon/server/active_job.h"
#include "daemon/server/async.h"
#include "daemon/store/checkpoint_partitions.h"

namespace dtrain::server {
namespace {

std::string Pids(const std::vector<pid_t>& pids) {
  std::string out;
  for (pid_t pid : pids) out += (out.empty() ? "" : ", ") + std::to_string(pid);
  return out;
}

// The common admission of an attempt without its first checkpoint's blobs: what a process that
// replaced one of a running attempt starts from.
Admission LateAdmission(const Admission& common) {
  Admission late;
  late.spec_toml = common.spec_toml;
  late.data_token = common.data_token;
  late.peers = common.peers;
  late.heartbeat_timeout = common.heartbeat_timeout;
  return late;
}

}  // namespace

void JobManager::GiveUpReplacing(Job& job, const std::vector<int>& partitions, int rank,
                                 int respawned) {
  job.machine.GiveUpReplacing(partitions, respawned);
  job.rejoining.erase(config::RoleOf(job.config.cluster, rank).replica);
  job.processes[static_cast<std::size_t>(rank)].row = 0;  // its exit is recorded
}

asio::awaitable<bool> JobManager::ReplaceReplica(std::int64_t id, std::uint64_t attempt, int rank,
                                                 double exited_at) {
  Job* job = jobs_.at(id).get();
  const config::ClusterConfig& cluster = job->config.cluster;
  const int replica = config::RoleOf(cluster, rank).replica;
  const std::vector<int> partitions = config::ReplicaPartitions(cluster, replica);
  const Process& me = job->processes[static_cast<std::size_t>(rank)];
  const ProcessState& state = job->machine.process(rank);
  const std::int64_t row = me.row;
  const ProcessExit exit = state.exit;
  const pid_t pid = me.pid;
  if (!state.replacing) {
    // The first of the replica's processes to end: the others lost their links to it. They are
    // killed, not stopped: a clean stop would say goodbye to their shards, which then would not
    // let their successors rejoin.
    job->rejoining[replica].why = job->Who(rank) + " " + DescribeExit(exit);
    job->machine.BeginReplacing(partitions);
    if (exit.signal == 0 && partitions.size() > 1) {
      // A partition that failed on its own is most likely the survivor of one that was killed:
      // that death gets a moment to arrive, so that the reason names it.
      asio::steady_timer blame(io_, kBlameGrace);
      co_await blame.async_wait(asio::use_awaitable);
      job = Current(id, attempt);
      if (job == nullptr) co_return true;
    }
    for (int r : job->machine.TakeKills(partitions)) {
      supervisor_.Kill(job->processes[static_cast<std::size_t>(r)].pid);
    }
  } else if (exit.signal != 0 && !state.stop_sent &&
             job->rejoining[replica].why.find("killed") == std::string::npos) {
    job->rejoining[replica].why = job->Who(rank) + " " + DescribeExit(exit);
  }
  co_await RecordProcessExit({id, rank, pid}, row, exit, exited_at);
  job = Current(id, attempt);
  if (job == nullptr) co_return true;
  // Another partition's exit may have finished the replacement (or given it up) meanwhile.
  if (job->processes[static_cast<std::size_t>(rank)].pid != pid ||
      !job->machine.process(rank).replacing) {
    co_return true;
  }
  const bool all_exited = std::all_of(partitions.begin(), partitions.end(),
                                      [&](int r) { return job->machine.process(r).exited; });
  if (!all_exited) co_return true;
  const std::string why = job->rejoining[replica].why;
  if (!job->machine.MayReplace()) {
    // The job ends instead (an elastic one carries on without it, unless a round waited for
    // this replacement): this exit is handled as any other, the replica's others as gone.
    GiveUpReplacing(*job, partitions, rank, 0);
    if (job->regroup) ApplyRegroup(*job, job->regroup->NotReplaced(rank));
    co_return false;
  }
  std::vector<pid_t> pids;
  for (int r : partitions) {
    Process& old = job->processes[static_cast<std::size_t>(r)];
    Process fresh;
    fresh.rank = r;
    fresh.node = old.node;
    fresh.token = net::RandomToken();
    if (Status spawned = SpawnProcess(id, attempt, fresh); !spawned.ok()) {
      // The replica cannot come back: the attempt fails (and may restart whole); the ones
      // started already are among those it stops.
      GiveUpReplacing(*job, partitions, rank, static_cast<int>(pids.size()));
      FailAttempt(*job, "cannot start " + job->Who(r) + " again: " + spawned.message());
      co_return false;
    }
    pids.push_back(fresh.pid);
    old = std::move(fresh);
    job->machine.Respawned(r);
  }
  job->machine.ReplicaRestarted();
  const std::string started =
      partitions.size() == 1
          ? "started again alone (pid " + Pids(pids) + "): it rejoins"
          : "replica " + std::to_string(replica) + "'s " + std::to_string(partitions.size()) +
                " partitions started again (pids " + Pids(pids) + "): they rejoin";
  const std::string rejoins =
      job->regroup ? " the others' ring at a step boundary" : " the shards while the others go on";
  const std::string reason = "restart " + std::to_string(job->machine.restarts()) + " of " +
                             std::to_string(job->machine.max_restarts()) + ": " + why + "; " +
                             started + rejoins;
  store_.AppendLog(id, 0, "daemon", reason);
  co_await StoreEvent(id, reason, /*sets_reason=*/false);
  for (std::size_t i = 0; i < partitions.size(); ++i) {
    co_await RecordStart(id, attempt, partitions[i], pids[i]);
  }
  co_return true;
}

asio::awaitable<Result<Admission>> JobManager::AdmitRestarted(std::int64_t id,
                                                              std::uint64_t attempt, int rank) {
  const Status refused = Status::Error("job " + std::to_string(id) + " rank " +
                                       std::to_string(rank) + " is no longer expected");
  Job* job = jobs_.at(id).get();
  const config::ClusterConfig cluster = job->config.cluster;
  const config::ProcessRole role = config::RoleOf(cluster, rank);
  const std::vector<int> partitions = config::ReplicaPartitions(cluster, role.replica);
  // Its siblings and later joiners see where it listens now.
  const Process& me = job->processes[static_cast<std::size_t>(rank)];
  PeerAddress& address = job->admission.peers[static_cast<std::size_t>(rank)];
  address.host = me.data_host.empty() ? settings_.data_host : me.data_host;
  address.port = me.data_port;
  address.partition_port = me.partition_port;
  if (job->regroup) {
    job->rejoining.erase(role.replica);
    Admission joining = LateAdmission(job->admission);
    joining.joining = true;
    ApplyRegroup(*job, job->regroup->Joined(rank));
    co_return joining;
  }

  Job::Rejoin& rejoin = job->rejoining[role.replica];
  if (!rejoin.admitted) {
    rejoin.admitted.emplace(io_,
                            std::chrono::milliseconds(std::llround(cluster.timeout_seconds * 1000.0)));
  }
  Completion<Result<Job::Rejoin::Resume>> arrived = *rejoin.admitted;
  const bool last = std::all_of(partitions.begin(), partitions.end(), [&](int r) {
    return job->processes[static_cast<std::size_t>(r)].admitted;
  });
  if (last) {
    // One checkpoint for the whole replica, so that its partitions resume at the same step.
    auto latest = co_await OffThread(pool_, [this, id] { return store_.LatestCheckpoint(id); });
    Job::Rejoin::Resume resume;
    Status status = latest.status();
    if (latest.ok() && latest.value().checkpoint) {
      resume.step = latest.value().checkpoint->step;
      Result<std::vector<std::string>> blobs =
          store::SplitPartitionCheckpoint(cluster, *latest.value().checkpoint);
      status = blobs.status();
      if (blobs.ok()) resume.blobs = std::move(blobs).value();
    }
    arrived.Set(status.ok() ? Result<Job::Rejoin::Resume>(std::move(resume))
                            : Result<Job::Rejoin::Resume>(status));
  }
  const std::optional<Result<Job::Rejoin::Resume>> admitted = co_await arrived.Wait();
  job = Current(id, attempt);
  if (job == nullptr) co_return refused;
  if (last) job->rejoining.erase(role.replica);
  if (!admitted) {
    co_return Status::Error("the other partitions of replica " + std::to_string(role.replica) +
                            " did not start within cluster.timeout_seconds");
  }
  if (!admitted->ok()) co_return admitted->status();
  const Job::Rejoin::Resume& resume = admitted->value();
  Admission late = LateAdmission(job->admission);
  if (resume.step >= 0) {
    late.resume_step = resume.step;
    late.checkpoint_blob = resume.blobs[static_cast<std::size_t>(role.partition)];
  }
  co_return late;
}

}  // namespace dtrain::server
