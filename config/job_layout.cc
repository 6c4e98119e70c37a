#include "config/job_layout.h"

#include "config/mode_traits.h"

namespace dtrain::config {

ProcessRole RoleOf(const ClusterConfig& c, int rank) {
  const int k = c.model_parallel;
  ProcessRole role;
  if (rank < c.Trainers()) {
    role.replica = rank / k;
    role.partition = rank % k;
    role.group_rank = role.replica;
    return role;
  }
  const int shards = c.Servers();
  if (rank >= c.Trainers() + c.Shards()) {
    role.kind = ProcessRole::Kind::kCoordinator;
    return role;
  }
  role.kind = ProcessRole::Kind::kShard;
  role.partition = (rank - c.Trainers()) / shards;
  role.shard = (rank - c.Trainers()) % shards;
  role.group_rank = c.MostMembers() + role.shard;
  return role;
}

int TrainerRank(const ClusterConfig& c, int replica, int partition) {
  return replica * c.model_parallel + partition;
}

int ShardRank(const ClusterConfig& c, int partition, int shard) {
  return c.Trainers() + partition * c.Servers() + shard;
}

std::vector<int> DataParallelGroup(const ClusterConfig& c, int partition) {
  std::vector<int> ranks;
  for (int r = 0; r < c.MostMembers(); ++r) ranks.push_back(TrainerRank(c, r, partition));
  for (int s = 0; s < c.Servers(); ++s) ranks.push_back(ShardRank(c, partition, s));
  return ranks;
}

std::vector<int> ReplicaPartitions(const ClusterConfig& c, int replica) {
  std::vector<int> ranks;
  for (int p = 0; p < c.model_parallel; ++p) ranks.push_back(TrainerRank(c, replica, p));
  return ranks;
}

std::string DescribeProcess(const ClusterConfig& c, int rank) {
  const ProcessRole role = RoleOf(c, rank);
  const bool partitioned = c.model_parallel > 1;
  if (role.kind == ProcessRole::Kind::kReplica) {
    return "worker rank " + std::to_string(rank) +
           (partitioned ? " (replica " + std::to_string(role.replica) + ", partition " +
                              std::to_string(role.partition) + ")"
                        : std::string());
  }
  if (role.kind == ProcessRole::Kind::kCoordinator) return "coordinator";
  return "shard " + std::to_string(role.shard) +
         (partitioned ? " of partition " + std::to_string(role.partition) : std::string());
}

const char* RoleName(const ClusterConfig& c, int rank) {
  switch (RoleOf(c, rank).kind) {
    case ProcessRole::Kind::kReplica:
      return "replica";
    case ProcessRole::Kind::kShard:
      return "server";
    case ProcessRole::Kind::kCoordinator:
      return "coordinator";
  }
  return "replica";
}

int LeadRank(const ClusterConfig& c) {
  return TraitsOf(c.mode).coordinator ? c.Trainers() + c.Shards() : 0;
}

bool WritesCheckpoints(const ClusterConfig& c, int rank) {
  const ProcessRole role = RoleOf(c, rank);
  if (TraitsOf(c.mode).checkpoints == CheckpointWriter::kCoordinator) {
    return role.kind == ProcessRole::Kind::kCoordinator;
  }
  return role.kind == ProcessRole::Kind::kReplica && role.replica == 0;
}

bool Expendable(const ClusterConfig& c, int rank) {
  return TraitsOf(c.mode).lost_replica == LostProcess::kCarryOn &&
         RoleOf(c, rank).kind == ProcessRole::Kind::kReplica;
}

}  // namespace dtrain::config
