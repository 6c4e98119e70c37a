#include "core/sparse/streamed_batches.h"

#include <algorithm>
#include <utility>

#include "core/data/random.h"

namespace dtrain::sparse {

Result<std::unique_ptr<StreamedBatches>> StreamedBatches::Open(data::LibsvmBlockIndex index,
                                                               std::size_t batch_size,
                                                               std::uint64_t seed, int rank,
                                                               int world_size) {
  const std::size_t blocks = index.blocks.size();
  const auto world = static_cast<std::size_t>(world_size);
  if (batch_size == 0 || world_size < 1 || rank < 0 || rank >= world_size) {
    return Status::Error("streamed batches: invalid layout");
  }
  if (blocks < world) {
    return Status::Error(index.path + " is " + std::to_string(blocks) +
                         " block(s) of streamed "
                         "data for " +
                         std::to_string(world_size) +
                         " replicas, each of which needs one: lower data.stream_block_mib");
  }
  std::size_t most = 0;
  std::vector<std::size_t> mine;
  for (std::size_t r = 0; r < world; ++r) {
    std::size_t steps = 0;
    for (std::size_t b = r * blocks / world; b < (r + 1) * blocks / world; ++b) {
      steps += (index.blocks[b].rows + batch_size - 1) / batch_size;
      if (r == static_cast<std::size_t>(rank)) mine.push_back(b);
    }
    most = std::max(most, steps);
  }
  return std::unique_ptr<StreamedBatches>(
      new StreamedBatches(std::move(index), batch_size, seed, std::move(mine), most));
}

StreamedBatches::StreamedBatches(data::LibsvmBlockIndex index, std::size_t batch_size,
                                 std::uint64_t seed, std::vector<std::size_t> mine,
                                 std::size_t steps_per_epoch)
    : index_(std::move(index)),
      batch_size_(batch_size),
      seed_(seed),
      mine_(std::move(mine)),
      steps_per_epoch_(steps_per_epoch) {}

StreamedBatches::~StreamedBatches() {
  if (ahead_.valid()) ahead_.wait();
}

std::size_t StreamedBatches::BatchesOf(std::size_t block) const {
  return (index_.blocks[block].rows + batch_size_ - 1) / batch_size_;
}

std::vector<std::size_t> StreamedBatches::Order(std::uint64_t epoch) const {
  std::vector<std::size_t> order;
  for (const std::uint32_t i : data::EpochPermutation(mine_.size(), seed_, epoch)) {
    order.push_back(mine_[i]);
  }
  return order;
}

void StreamedBatches::ReadAhead(std::size_t block) {
  if (ahead_block_ == block || loaded_ == block) return;
  if (ahead_.valid()) ahead_.wait();
  ahead_block_ = block;
  ahead_ = std::async(std::launch::async,
                      [this, block] { return data::ReadLibsvmBlock(index_, block); });
}

Status StreamedBatches::Load(std::size_t block) {
  if (loaded_ == block) return Status::Ok();
  Result<data::SparseRows> rows = Status::Error("unread");
  if (ahead_block_ == block && ahead_.valid()) {
    rows = ahead_.get();
  } else {
    if (ahead_.valid()) ahead_.wait();
    rows = data::ReadLibsvmBlock(index_, block);
  }
  ahead_block_.reset();
  loaded_.reset();
  if (!rows.ok()) return rows.status();
  rows_ = std::move(rows).value();
  loaded_ = block;
  perm_epoch_.reset();
  return Status::Ok();
}

Status StreamedBatches::Fill(std::uint64_t epoch, std::size_t index, SparseBatch* batch) {
  if (order_epoch_ != epoch) {
    order_ = Order(epoch);
    first_step_.assign(1, 0);
    for (const std::size_t block : order_)
      first_step_.push_back(first_step_.back() + BatchesOf(block));
    order_epoch_ = epoch;
  }
  if (index >= first_step_.back()) {  // past this replica's blocks: an empty batch
    FillSparseBatch(rows_, {}, batch);
    return Status::Ok();
  }
  const auto place = static_cast<std::size_t>(
      std::upper_bound(first_step_.begin(), first_step_.end(), index) - first_step_.begin() - 1);
  const std::size_t block = order_[place];
  if (Status loaded = Load(block); !loaded.ok()) return loaded;
  if (perm_epoch_ != epoch) {  // the block's first batch this epoch
    perm_ = data::EpochPermutation(rows_.rows(), data::MixSeed(seed_, block), epoch);
    perm_epoch_ = epoch;
    // The block to read next: the next in this epoch's order, or the next epoch's first.
    ReadAhead(place + 1 < order_.size() ? order_[place + 1] : Order(epoch + 1).front());
  }
  const std::size_t begin = (index - first_step_[place]) * batch_size_;
  const std::size_t end = std::min(begin + batch_size_, perm_.size());
  FillSparseBatch(rows_, {perm_.data() + begin, end - begin}, batch);
  return Status::Ok();
}

}  // namespace dtrain::sparse
