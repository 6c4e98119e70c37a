// ResidualDeposits: a sync parameter-server shard's collection of its workers' error-feedback
// residuals for one checkpoint (ps_protocol.md, "Residuals"). With compressed pushes every worker
// keeps a residual (what its pushes left out so far); for a checkpoint each worker sends the
// shard the residual's slice over the shard's range, and the shard hands all N slices, rank by
// rank, to rank 0, the checkpoint's writer.
//
//   ResidualDeposits deposits(workers, range_size);
//   deposits.Begin(step);                                // rank 0's request names the step
//   Status s = deposits.Deposit(rank, step, slice);       // each worker's, rank 0's included
//   if (deposits.Complete()) reply_data = deposits.Slices();
//   deposits.Clear();
//
// Invariants: a slice is accepted only for the step Begin named, once per worker, of exactly
// range_size floats, from a rank in [0, workers); anything else is refused with an error naming
// the worker, and nothing is kept of it. Memory: at most workers x range_size floats, held from
// Begin to Clear only. One thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"

namespace dtrain::dist {

class ResidualDeposits {
 public:
  ResidualDeposits(std::size_t workers, std::size_t range_size);

  // Starts collecting the slices of the checkpoint before step `step` (the next step the workers
  // push), forgetting any earlier collection.
  void Begin(std::uint64_t step);
  // Worker `rank`'s slice for the checkpoint before `step`.
  Status Deposit(int rank, std::uint64_t step, std::span<const float> slice);
  // Every worker's slice has come.
  bool Complete() const;
  // The slices, rank by rank (valid until Begin or Clear).
  std::vector<std::span<const float>> Slices() const;
  // Frees the slices.
  void Clear();

  bool collecting() const { return collecting_; }
  std::uint64_t step() const { return step_; }

 private:
  std::size_t workers_;
  std::size_t range_size_;
  bool collecting_ = false;
  std::uint64_t step_ = 0;
  std::vector<float> slices_;    // workers_ x range_size_ while collecting, rank by rank
  std::vector<bool> deposited_;  // per worker
};

}  // namespace dtrain::dist
