// The processes a job runs and how they meet — what a mode describes to the scheduler, so that
// the scheduler itself knows only "process rank R is this one":
//
//   ranks 0 .. N*K - 1         trainers: replica r's partition p is rank r * K + p
//   ranks N*K .. N*K + K*S - 1  shards: partition p's shard s is rank N*K + p * S + s
//
// for N = cluster.workers replicas of K = cluster.model_parallel partitions and S shards per
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
  enum class Kind { kReplica, kShard };
  Kind kind = Kind::kReplica;
  int replica = 0;    // replicas: which one
  int partition = 0;  // the model partition it trains or serves (0 without model parallelism)
  int shard = 0;      // shards: which of its partition's
  int group_rank = 0;  // its rank in its data-parallel group: the replica, or N + shard
};

ProcessRole RoleOf(const ClusterConfig& c, int rank);
int TrainerRank(const ClusterConfig& c, int replica, int partition);
int ShardRank(const ClusterConfig& c, int partition, int shard);
// Partition p's data-parallel group: its replicas' ranks in replica order, then its shards'.
std::vector<int> DataParallelGroup(const ClusterConfig& c, int partition);
// Replica r's partitions, in partition order.
std::vector<int> ReplicaPartitions(const ClusterConfig& c, int replica);
// "worker rank 3", "worker rank 3 (replica 1, partition 1)", "shard 2", "shard 1 of partition 1".
std::string DescribeProcess(const ClusterConfig& c, int rank);

}  // namespace dtrain::config
