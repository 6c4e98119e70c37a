// Deterministic shuffling, sharding and batching of row indices for data-parallel training.
//
//   BatchSampler sampler(train.rows, /*batch_size=*/128, seed, rank, world_size);
//   for (std::size_t i = 0; i < sampler.StepsPerEpoch(); ++i) Use(sampler.Batch(epoch, i));
//
// Every rank computes the same epoch permutation from (rows, seed, epoch) and takes its own
// contiguous slice of it, so ranks never exchange indices and together see each row exactly once
// per epoch. The free functions are pure (safe for concurrent use); a BatchSampler caches the
// current epoch's permutation: one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace dtrain::data {

// Permutation of [0, rows) for this epoch, a pure function of (rows, seed, epoch): Fisher–Yates
// driven by SplitMix64, so it does not depend on the standard library. rows < 2^32.
std::vector<std::uint32_t> EpochPermutation(std::size_t rows, std::uint64_t seed,
                                            std::uint64_t epoch);

struct ShardRange {
  std::size_t begin = 0, end = 0;
  std::size_t size() const { return end - begin; }
};

// Rank `rank`'s part of [0, rows): disjoint, sizes differ by at most 1 (lower ranks get the
// extra rows), union = [0, rows). Requires 0 <= rank < world_size.
ShardRange ShardOf(std::size_t rows, int rank, int world_size);

// How the ranks divide an epoch's permutation.
enum class ShardMode {
  // Each rank owns a contiguous ShardOf slice of the permutation and cuts it into batches
  // (asynchronous and local-SGD modes: every worker walks its own part of the data).
  kContiguousShards,
  // Step i's global batch is the permutation's slice [i*G, (i+1)*G) (G = W*b unless the sampler
  // is given another); rank r takes its r-th ShardOf part. The ranks of a synchronous step
  // together see exactly the batch one worker with batch G would see, so N workers x batch b
  // train like one worker x batch N*b; and with G fixed, any number of ranks trains the same
  // steps (an elastic job that lost a replica: the shares grow, the steps stay).
  kGlobalBatches,
};

// Backup workers (kGlobalBatches): a step may go on without some ranks' gradients. Their rows are
// owed to the next step, which takes `owed ++ fresh`: the positions (in the epoch's permutation)
// owed from the step before, then its own fresh slice [i*G, (i+1)*G); rank r trains the r-th
// ShardOf part of that list. After a step that took the ranks of `taken` (bit r: rank r), the
// next step's owed positions are the parts of the ranks not taken, in rank order. So an epoch whose
// last step takes every rank trains every row exactly once, whatever the masks.
void OwedAfter(std::span<const std::uint32_t> owed, ShardRange fresh, int world_size,
               std::uint64_t taken, std::vector<std::uint32_t>& next);

// Iterates one rank's batches of each epoch (permutation from (seed, epoch)), per ShardMode; the
// last batch may be short. StepsPerEpoch() is the same on every rank; a rank may get a shorter
// (or empty) final batch.
class BatchSampler {
 public:
  // batch_size > 0 (per rank); 0 <= rank < world_size. `global_batch`: kGlobalBatches' G, the
  // rows of a step over all ranks (0: batch_size x world_size); ignored by kContiguousShards.
  BatchSampler(std::size_t rows, std::size_t batch_size, std::uint64_t seed, int rank = 0,
               int world_size = 1, ShardMode mode = ShardMode::kContiguousShards,
               std::size_t global_batch = 0);

  std::size_t StepsPerEpoch() const { return steps_per_epoch_; }
  const ShardRange& shard() const { return shard_; }
  // Rows in batch `index` summed over all ranks (to weight a rank's share of a global step).
  std::size_t StepRows(std::size_t index) const;
  // Rows in batches [0, index) summed over all ranks: an epoch's rows done before step `index`.
  std::size_t RowsBefore(std::size_t index) const;

  // Row indices of batch `index` (0-based, < StepsPerEpoch()) of `epoch`. Computes and caches
  // the epoch's permutation; the span stays valid until Batch is called with another epoch.
  std::span<const std::uint32_t> Batch(std::uint64_t epoch, std::size_t index);
  // kGlobalBatches, after the step before owed `owed` (OwedAfter): this rank's rows of batch
  // `index`, its part of owed ++ fresh. The span stays valid until the next call of either Batch.
  std::span<const std::uint32_t> Batch(std::uint64_t epoch, std::size_t index,
                                       std::span<const std::uint32_t> owed);
  // kGlobalBatches: the permutation's positions batch `index` takes fresh, [index*G, (index+1)*G)
  // clipped to the epoch.
  ShardRange Fresh(std::size_t index) const;

 private:
  // [begin, end) of the permutation that `rank` trains on in step `index`.
  ShardRange RangeOf(int rank, std::size_t index) const;
  // The permutation of `epoch`, computed once per epoch.
  const std::vector<std::uint32_t>& PermutationOf(std::uint64_t epoch);

  std::size_t rows_;
  std::size_t batch_size_;
  std::size_t global_batch_;  // kGlobalBatches: the rows of a step over all ranks
  std::uint64_t seed_;
  int rank_;
  int world_size_;
  ShardMode mode_;
  ShardRange shard_;
  std::size_t steps_per_epoch_ = 0;
  bool has_permutation_ = false;
  std::uint64_t cached_epoch_ = 0;
  std::vector<std::uint32_t> permutation_;
  std::vector<std::uint32_t> owed_batch_;  // Batch with owed positions: this rank's rows
};

}  // namespace dtrain::data
