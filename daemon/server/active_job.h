// The daemon's in-memory record of an active job and of each process of its current attempt:
// JobManager's private state, shared by the files that implement it (job_manager.cc,
// job_intake.cc, rendezvous.cc, replica_restart.cc, elastic_regroup.cc, elastic_growth.cc,
// slurm_attempt.cc, slurm_growth.cc). What follows a process's exit is its attempt machine's to
// decide (attempt_machine.h). Touched only on the daemon's io thread.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "config/job.h"
#include "config/job_layout.h"
#include "daemon/server/attempt_machine.h"
#include "daemon/server/checkpoint_assembler.h"
#include "daemon/server/completion.h"
#include "daemon/server/job_manager.h"
#include "daemon/server/log_quota.h"
#include "daemon/server/regroup_round.h"
#include "daemon/store/checkpoint.h"

namespace dtrain::server {

// "killed by signal SIGKILL", "exited with status 1".
std::string DescribeExit(const ProcessExit& exit);

// One process of a job's current attempt (config/job_layout.h: a replica's partition, or a shard):
// how to reach it. What it reported and how it ended are the attempt machine's.
struct JobManager::Process {
  int rank = 0;
  std::string node;  // the peer it runs on; empty: this daemon's host
  pid_t pid = 0;     // 0 until it is started
  double started = 0;  // when it was started (seconds since the epoch), for its row
  std::int64_t row = 0;
  std::string token;
  bool admitted = false;
  std::string data_host;  // where it listens for its peers, as its hello said
  std::uint16_t data_port = 0;
  std::uint16_t partition_port = 0;
};

struct JobManager::Job {
  Job(std::int64_t job_id, Owner job_owner, config::JobConfig job_config, int default_max_restarts,
      int restarts)
      : id(job_id),
        owner(job_owner),
        config(std::move(job_config)),
        machine(job_id, RestartPolicyFor(config, default_max_restarts), restarts),
        checkpoint_assembly(config.cluster.model_parallel) {}

  std::int64_t id = 0;
  Owner owner;
  config::JobConfig config;
  std::string spec_toml;
  store::JobState state = store::JobState::kQueued;
  int priority = 0;
  int cores = 1;
  std::string pending_reason;
  // The failure and restart policy: what its processes reported, and what follows their exits.
  AttemptMachine machine;
  // The current attempt: its processes, while any is running or being started.
  bool active = false;
  std::uint64_t attempt = 0;
  std::vector<Process> processes;
  std::vector<std::string> placement;  // node by rank, chosen when the job was scheduled
  // The replicas placed: ranks 0 .. placed_workers - 1 were started. An elastic job without the
  // cores for all starts with fewer (at least cluster.min_workers), and the others join as cores
  // free up (GrowElastic), up to cluster.max_workers; every other job places all of
  // cluster.workers.
  int placed_workers = 0;
  // Rendezvous: admitted processes wait for it until the deadline; it is set once the last one
  // arrived (machine.ready()), abandoned when the attempt failed.
  std::optional<Completion<bool>> rendezvous;
  Admission admission;  // common to every process, filled in by the last to arrive
  std::optional<LogQuota> log_quota;  // the attempt's, from its start
  std::vector<std::string> checkpoint_parts;  // by partition: the blob each resumes from
  // Model parallelism: the parts of a checkpoint that replica 0's partitions sent, by step, until
  // all have come; the senders of the others wait for the outcome of storing it.
  CheckpointAssembler checkpoint_assembly;
  std::map<std::int64_t, Completion<Status>> checkpoint_stored;
  // Async: replicas being started again while the others go on, by replica. Their old processes
  // are stopped and waited for (`why`: the exit that began it); the new ones are admitted
  // together, so that a replica's partitions learn each other's addresses and resume from the
  // same checkpoint: they wait for `admitted`, set once the last has come (none if they did not
  // all come in time).
  struct Rejoin {
    std::string why;
    struct Resume {
      std::int64_t step = -1;             // -1: no checkpoint yet
      std::vector<std::string> blobs;     // by partition
    };
    std::optional<Completion<Result<Resume>>> admitted;
  };
  std::map<int, Rejoin> rejoining;
  // Elastic jobs (config::ClusterConfig::Elastic; elastic_regroup.cc): the attempt's
  // membership and its regroup rounds; each round's answer by its epoch, which the members that
  // asked wait for (within a few rounds' time, as a last resort: the round's own deadline
  // answers first); the open round's deadline; the epoch of the round each member is to be told
  // `regroup_now` of at its next frame; the newest step the job's metrics recorded.
  std::optional<RegroupRound> regroup;
  std::map<int, Completion<RegroupAnswer>> regroup_answers;
  std::optional<Completion<bool>> regroup_closed;  // the open round's: set once it completes
  std::map<int, int> regroup_notices;
  std::int64_t newest_step = 0;
  // A member finished training (worker_done completed or target): replacements are stopped,
  // not started, and no round fails the attempt any more.
  bool regroup_finished = false;

  // Wakes the askers of every round not answered yet (they are told the regroup failed).
  void AbandonRegroups() {
    for (auto& [epoch, answered] : regroup_answers) answered.Abandon();
    regroup_answers.clear();
    if (regroup_closed) regroup_closed->Abandon();
  }
  // cluster.scheduler = "slurm" (slurm_attempt.cc): the attempt's allocation, once Slurm named
  // it (0: none), and its salloc while that runs (0: none). An elastic job's growth
  // (slurm_growth.cc): the allocation of each replica started in one of its own, by rank; the
  // one asked for now, once Slurm named it, and its salloc while that runs; `ended` once the
  // attempt's allocations were cancelled (what is granted later is cancelled at once).
  struct SlurmAllocation {
    std::int64_t id = 0;
    pid_t salloc = 0;
    std::map<int, std::int64_t> grown;
    std::int64_t growing = 0;
    pid_t growth_salloc = 0;
    bool ended = false;

    // The allocation process `rank` runs in.
    std::int64_t Of(int rank) const {
      const auto it = grown.find(rank);
      return it == grown.end() ? id : it->second;
    }
    // Every allocation the attempt made or is waiting for.
    std::vector<std::int64_t> All() const {
      std::vector<std::int64_t> all;
      if (id != 0) all.push_back(id);
      for (const auto& [rank, allocation] : grown) all.push_back(allocation);
      if (growing != 0) all.push_back(growing);
      return all;
    }
  };
  SlurmAllocation slurm;

  bool OnSlurm() const { return config.cluster.scheduler == config::Scheduler::kSlurm; }
  // How an elastic job's replicas it did not start with come (its events and reason say it).
  const char* OthersJoin() const {
    return OnSlurm() ? "the others join as Slurm grants them" : "the others join as cores free up";
  }

  // Whether process `rank` sends the job's checkpoints: an elastic job's first member, else
  // config::WritesCheckpoints.
  bool WritesCheckpoints(int rank) const {
    if (regroup) return regroup->members().front() == rank;
    return config::WritesCheckpoints(config.cluster, rank);
  }

  // The attempt's first membership: the placed replicas' ranks, when fewer than
  // cluster.workers; else empty (every rank, as regroup_round.h and the admission take it).
  std::vector<int> PlacedRanks() const {
    std::vector<int> ranks;
    if (placed_workers >= config.cluster.workers) return ranks;
    for (int rank = 0; rank < placed_workers; ++rank) ranks.push_back(rank);
    return ranks;
  }

  std::string Who(int rank) const {
    const Process& p = processes[static_cast<std::size_t>(rank)];
    return config::DescribeProcess(config.cluster, rank) + (p.node.empty() ? "" : " on " + p.node) +
           " (pid " + std::to_string(p.pid) + ")";
  }
};

}  // namespace dtrain::server
