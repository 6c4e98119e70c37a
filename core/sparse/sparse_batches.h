// SparseBatchSource: where a sparse training loop's batches come from — rows held in memory and
// cut by a data::BatchSampler (SampledBatches), or a file streamed a block at a time
// (StreamedBatches, streamed_batches.h). Either way batch i of epoch e is a pure function of
// (seed, e, i), so a resumed run continues with the batches an uninterrupted one would have, and
// StepsPerEpoch() is the same on every replica (a replica may get a short or empty batch).
//
//   SampledBatches batches(rows, 32, seed, rank, world, data::ShardMode::kContiguousShards);
//   Status s = batches.Fill(epoch, i, &batch);
//
// One thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/data/sampler.h"
#include "core/data/sparse_rows.h"
#include "core/sparse/sparse_batch.h"
#include "core/status.h"

namespace dtrain::sparse {

class SparseBatchSource {
 public:
  virtual ~SparseBatchSource() = default;
  virtual std::size_t StepsPerEpoch() const = 0;
  // This replica's batch `index` (< StepsPerEpoch()) of `epoch`, into *batch (0 rows or more).
  virtual Status Fill(std::uint64_t epoch, std::size_t index, SparseBatch* batch) = 0;
  // The rows a pass over the data visits, over every replica.
  virtual std::uint64_t Rows() const = 0;
};

// How replicas share rows in memory: each its contiguous share of an epoch, or, where the
// parameters are collective (sync), its part of each step's global batch (N replicas of batch b
// then train like one of batch N b).
inline data::ShardMode ReplicaShardMode(bool collective) {
  return collective ? data::ShardMode::kGlobalBatches : data::ShardMode::kContiguousShards;
}

// Rows in memory: a BatchSampler's batches of them.
class SampledBatches final : public SparseBatchSource {
 public:
  // `rows` must outlive this.
  SampledBatches(const data::SparseRows& rows, std::size_t batch_size, std::uint64_t seed, int rank,
                 int world_size, data::ShardMode mode)
      : rows_(rows), sampler_(rows.rows(), batch_size, seed, rank, world_size, mode) {}
  std::size_t StepsPerEpoch() const override { return sampler_.StepsPerEpoch(); }
  Status Fill(std::uint64_t epoch, std::size_t index, SparseBatch* batch) override {
    FillSparseBatch(rows_, sampler_.Batch(epoch, index), batch);
    return Status::Ok();
  }
  std::uint64_t Rows() const override { return rows_.rows(); }

 private:
  const data::SparseRows& rows_;
  data::BatchSampler sampler_;
};

}  // namespace dtrain::sparse
