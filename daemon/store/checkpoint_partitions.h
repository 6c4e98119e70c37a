// Checkpoints of a model-parallel job: the store keeps one checkpoint of the whole replica, in
// the model's own parameter layout (the layout of a .dtm file and of a job without model
// parallelism), while each of the replica's K partitions captures and resumes from its own part
// in the partition-major layout of core/model/partition_plan.h.
//
//   Result<CheckpointData> whole = JoinPartitionCheckpoints(job.cluster, std::move(parts));
//   Result<std::vector<std::string>> blobs = SplitPartitionCheckpoint(job.cluster, whole);
//
// Join: the parts in partition order, all of one step (MergeCheckpointParts), then params and
// every optimizer state vector put in model layout. Split: the inverse, one encoded blob per
// partition, each with its partition's shards' clocks. Without model parallelism both pass the
// checkpoint through. Errors name the step and what does not fit. Pure functions.
#pragma once

#include <string>
#include <vector>

#include "config/job.h"
#include "daemon/store/checkpoint.h"

namespace dtrain::store {

Result<CheckpointData> JoinPartitionCheckpoints(const config::ClusterConfig& cluster,
                                                std::vector<CheckpointData> parts);
Result<std::vector<std::string>> SplitPartitionCheckpoint(const config::ClusterConfig& cluster,
                                                          const CheckpointData& whole);

}  // namespace dtrain::store
