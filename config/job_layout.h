// The processes a job runs and how they meet — what a mode describes to the scheduler, so that
// the scheduler itself knows only "process rank R is this one":
//
//   ranks 0 .. N*K - 1         trainers: replica r's partition p is rank r * K + p
//   ranks N*K .. N*K + K*S - 1  shards: partition p's shard s is rank N*K + p * S + s
//   rank N*K + K*S              mode "sandblaster": the coordinator
//
// for N = cluster.workers replicas (an elastic job's cluster.MostMembers(), max_workers where it
// grows beyond workers) of K = cluster.model_parallel partitions and S shards per
// partition (cluster.Servers(); 0 in the modes without parameter servers). Without model
// parallelism (K = 1) a replica is rank r and shard s rank N + s. Partition p of every replica
// and partition p's shards form a data-parallel group, which trains partition p's parameters as
// a job of N workers and S shards would train a whole model; the K partitions of one replica
// form a ring (model_parallel > 1), over which they pass activations and gradients.
//
//   ProcessRole role = RoleOf(job.cluster, rank);
//   if (role.kind == ProcessRole::Kind::kShard) ...;
//   std::vector<int> group = DataParallelGroup(job.cluster, role.partition);  // replicas, shards
//
// Pure functions of the cluster configuration.
#pragma once

#include <string>
#include <vector>

#include "config/job.h"

namespace dtrain::config {

struct ProcessRole {
  enum class Kind { kReplica, kShard, kCoordinator };
  Kind kind = Kind::kReplica;
  int replica = 0;     // replicas: which one
  int partition = 0;   // the model partition it trains or serves (0 without model parallelism)
  int shard = 0;       // shards: which of its partition's
  int group_rank = 0;  // its rank in its data-parallel group: the replica, or N + shard
};

ProcessRole RoleOf(const ClusterConfig& c, int rank);
int TrainerRank(const ClusterConfig& c, int replica, int partition);
int ShardRank(const ClusterConfig& c, int partition, int shard);
// Partition p's data-parallel group: its replicas' ranks in replica order, then its shards'.
std::vector<int> DataParallelGroup(const ClusterConfig& c, int partition);
// Replica r's partitions, in partition order.
std::vector<int> ReplicaPartitions(const ClusterConfig& c, int replica);
// "worker rank 3", "worker rank 3 (replica 1, partition 1)", "shard 2", "shard 1 of partition 1",
// "coordinator".
std::string DescribeProcess(const ClusterConfig& c, int rank);

// How the store and the rendezvous name a process's role: "replica", "server" or "coordinator".
const char* RoleName(const ClusterConfig& c, int rank);

// What a mode says about its processes to the scheduler, so that the scheduler asks rather than
// branches on modes:
// The process whose end is the job's (its reason, its steps): the coordinator in mode
// "sandblaster", else rank 0.
int LeadRank(const ClusterConfig& c);
// Whether `rank` sends the job's checkpoints: the lead, or with model parallelism replica 0's
// partitions.
bool WritesCheckpoints(const ClusterConfig& c, int rank);
// Whether the job goes on without `rank` when it exits or falls silent (a Sandblaster worker: the
// coordinator hands its units to the others); such a process is killed, never restarted, and
// fails nothing.
bool Expendable(const ClusterConfig& c, int rank);

}  // namespace dtrain::config
