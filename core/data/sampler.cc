#include "core/data/sampler.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <numeric>
#include <utility>

#include "core/data/random.h"

namespace dtrain::data {

std::vector<std::uint32_t> EpochPermutation(std::size_t rows, std::uint64_t seed,
                                            std::uint64_t epoch) {
  assert(rows <= std::numeric_limits<std::uint32_t>::max());
  std::vector<std::uint32_t> permutation(rows);
  std::iota(permutation.begin(), permutation.end(), std::uint32_t{0});
  SplitMix64 rng(MixSeed(seed, epoch));
  for (std::size_t i = rows; i > 1; --i) {
    const std::uint32_t j = rng.Bounded(static_cast<std::uint32_t>(i));
    std::swap(permutation[i - 1], permutation[j]);
  }
  return permutation;
}

ShardRange ShardOf(std::size_t rows, int rank, int world_size) {
  assert(world_size > 0 && rank >= 0 && rank < world_size);
  const auto world = static_cast<std::size_t>(world_size);
  const auto r = static_cast<std::size_t>(rank);
  const std::size_t base = rows / world;
  const std::size_t extra = rows % world;
  ShardRange range;
  range.begin = r * base + std::min(r, extra);
  range.end = range.begin + base + (r < extra ? 1 : 0);
  return range;
}

BatchSampler::BatchSampler(std::size_t rows, std::size_t batch_size, std::uint64_t seed, int rank,
                           int world_size, ShardMode mode, std::size_t global_batch)
    : rows_(rows),
      batch_size_(batch_size),
      global_batch_(global_batch > 0 ? global_batch
                                     : batch_size * static_cast<std::size_t>(world_size)),
      seed_(seed),
      rank_(rank),
      world_size_(world_size),
      mode_(mode),
      shard_(ShardOf(rows, rank, world_size)) {
  assert(batch_size > 0);
  if (mode_ == ShardMode::kGlobalBatches) {
    steps_per_epoch_ = (rows + global_batch_ - 1) / global_batch_;
  } else {
    // Rank 0's shard is a largest one.
    steps_per_epoch_ = (ShardOf(rows, 0, world_size).size() + batch_size - 1) / batch_size;
  }
}

ShardRange BatchSampler::RangeOf(int rank, std::size_t index) const {
  if (mode_ == ShardMode::kGlobalBatches) {
    const ShardRange fresh = Fresh(index);
    const ShardRange part = ShardOf(fresh.size(), rank, world_size_);
    return {fresh.begin + part.begin, fresh.begin + part.end};
  }
  const ShardRange shard = ShardOf(rows_, rank, world_size_);
  const std::size_t begin = std::min(shard.begin + index * batch_size_, shard.end);
  return {begin, std::min(begin + batch_size_, shard.end)};
}

std::size_t BatchSampler::StepRows(std::size_t index) const {
  std::size_t total = 0;
  for (int r = 0; r < world_size_; ++r) total += RangeOf(r, index).size();
  return total;
}

std::size_t BatchSampler::RowsBefore(std::size_t index) const {
  if (mode_ == ShardMode::kGlobalBatches) {
    // Steps [0, index) took the permutation's first rows, up to where step `index` starts.
    return std::min(index * global_batch_, rows_);
  }
  // Each rank's steps took its shard's first rows, up to where its step `index` starts.
  std::size_t total = 0;
  for (int r = 0; r < world_size_; ++r) {
    total += RangeOf(r, index).begin - ShardOf(rows_, r, world_size_).begin;
  }
  return total;
}

void OwedAfter(std::span<const std::uint32_t> owed, ShardRange fresh, int world_size,
               std::uint64_t taken, std::vector<std::uint32_t>& next) {
  next.clear();
  const std::size_t total = owed.size() + fresh.size();
  for (int r = 0; r < world_size; ++r) {
    if ((taken >> r) & 1u) continue;
    const ShardRange part = ShardOf(total, r, world_size);
    for (std::size_t i = part.begin; i < part.end; ++i) {
      next.push_back(i < owed.size() ? owed[i]
                                     : static_cast<std::uint32_t>(fresh.begin + i - owed.size()));
    }
  }
}

ShardRange BatchSampler::Fresh(std::size_t index) const {
  const std::size_t begin = std::min(index * global_batch_, rows_);
  return {begin, std::min(begin + global_batch_, rows_)};
}

const std::vector<std::uint32_t>& BatchSampler::PermutationOf(std::uint64_t epoch) {
  if (!has_permutation_ || cached_epoch_ != epoch) {
    permutation_ = EpochPermutation(rows_, seed_, epoch);
    cached_epoch_ = epoch;
    has_permutation_ = true;
  }
  return permutation_;
}

std::span<const std::uint32_t> BatchSampler::Batch(std::uint64_t epoch, std::size_t index) {
  assert(index < steps_per_epoch_);
  const ShardRange range = RangeOf(rank_, index);
  return std::span<const std::uint32_t>(PermutationOf(epoch)).subspan(range.begin, range.size());
}

std::span<const std::uint32_t> BatchSampler::Batch(std::uint64_t epoch, std::size_t index,
                                                   std::span<const std::uint32_t> owed) {
  if (owed.empty()) return Batch(epoch, index);
  assert(mode_ == ShardMode::kGlobalBatches && index < steps_per_epoch_);
  const std::vector<std::uint32_t>& permutation = PermutationOf(epoch);
  const ShardRange fresh = Fresh(index);
  const ShardRange part = ShardOf(owed.size() + fresh.size(), rank_, world_size_);
  owed_batch_.clear();
  for (std::size_t i = part.begin; i < part.end; ++i) {
    owed_batch_.push_back(permutation[i < owed.size() ? owed[i] : fresh.begin + i - owed.size()]);
  }
  return owed_batch_;
}

}  // namespace dtrain::data
