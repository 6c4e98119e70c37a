// CheckpointAssembler: the parts of model-parallel checkpoints as replica 0's partitions send
// them, kept by step until every partition's part of one step has come; then that step's parts,
// in partition order, to be joined and stored as one checkpoint (store/checkpoint_partitions.h).
//
//   CheckpointAssembler parts(cluster.model_parallel);
//   if (auto all = parts.Add(partition, std::move(part))) Store(JoinPartitionCheckpoints(*all));
//
// Pure: no waiting, no store. Invariants: a step is held until its last part comes (then it is
// forgotten) or Clear; a partition's second part of a step replaces its first.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "daemon/store/checkpoint.h"

namespace dtrain::server {

class CheckpointAssembler {
 public:
  explicit CheckpointAssembler(int partitions) : partitions_(partitions) {}

  // Adds `partition`'s part of the checkpoint at its step: all of that step's parts once this was
  // the last to come, else none.
  std::optional<std::vector<store::CheckpointData>> Add(int partition, store::CheckpointData part);
  // A new attempt: the parts of the last one's are dropped.
  void Clear() { pending_.clear(); }

 private:
  int partitions_;
  std::map<std::int64_t, std::vector<std::optional<store::CheckpointData>>> pending_;
};

}  // namespace dtrain::server
