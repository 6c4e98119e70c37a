// StreamedBatches: the batches of a libsvm file larger than memory (data.stream), read a block at
// a time (data/libsvm_blocks.h). The rule: each replica takes a contiguous share of the file's
// blocks (replica r of N: blocks [r K / N, (r+1) K / N) of K); each epoch it visits its blocks in
// an order drawn from (seed, epoch), and each block's rows in an order drawn from (seed, block,
// epoch), cut into batches that never span two blocks (a block's last batch may be short).
// StepsPerEpoch() is the most any replica's blocks make, the same on every replica; a replica
// whose blocks make fewer gets empty batches at its epoch's end. While a block is trained on, the
// next one in order is read by a thread of its own, so reading overlaps training; memory is two
// blocks' rows.
//
//   Result<std::unique_ptr<StreamedBatches>> b = StreamedBatches::Open(index, 32, seed, 0, 1);
//
// Fill from one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <vector>

#include "core/data/libsvm_blocks.h"
#include "core/sparse/sparse_batches.h"

namespace dtrain::sparse {

class StreamedBatches final : public SparseBatchSource {
 public:
  // Fails when the file has fewer blocks than there are replicas.
  static Result<std::unique_ptr<StreamedBatches>> Open(data::LibsvmBlockIndex index,
                                                       std::size_t batch_size, std::uint64_t seed,
                                                       int rank, int world_size);
  ~StreamedBatches() override;

  std::size_t StepsPerEpoch() const override { return steps_per_epoch_; }
  Status Fill(std::uint64_t epoch, std::size_t index, SparseBatch* batch) override;
  std::uint64_t Rows() const override { return index_.rows; }

 private:
  StreamedBatches(data::LibsvmBlockIndex index, std::size_t batch_size, std::uint64_t seed,
                  std::vector<std::size_t> mine, std::size_t steps_per_epoch);
  std::size_t BatchesOf(std::size_t block) const;
  // This replica's blocks in epoch `epoch`'s order.
  std::vector<std::size_t> Order(std::uint64_t epoch) const;
  Status Load(std::size_t block);  // into rows_, from the read ahead if it holds it
  void ReadAhead(std::size_t block);

  const data::LibsvmBlockIndex index_;
  const std::size_t batch_size_;
  const std::uint64_t seed_;
  const std::vector<std::size_t> mine_;
  const std::size_t steps_per_epoch_;
  std::optional<std::uint64_t> order_epoch_;
  std::vector<std::size_t> order_;       // of order_epoch_
  std::vector<std::size_t> first_step_;  // per place in order_, and the end
  std::optional<std::size_t> loaded_;    // the block in rows_
  data::SparseRows rows_;
  std::optional<std::uint64_t> perm_epoch_;  // the epoch perm_ is of (for loaded_)
  std::vector<std::uint32_t> perm_;
  std::optional<std::size_t> ahead_block_;
  std::future<Result<data::SparseRows>> ahead_;
};

}  // namespace dtrain::sparse
