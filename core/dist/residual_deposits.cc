#include "core/dist/residual_deposits.h"

#include <algorithm>
#include <string>

namespace dtrain::dist {

ResidualDeposits::ResidualDeposits(std::size_t workers, std::size_t range_size)
    : workers_(workers), range_size_(range_size) {}

void ResidualDeposits::Begin(std::uint64_t step) {
  collecting_ = true;
  step_ = step;
  slices_.assign(workers_ * range_size_, 0.0f);
  deposited_.assign(workers_, false);
}

Status ResidualDeposits::Deposit(int rank, std::uint64_t step, std::span<const float> slice) {
  const std::string worker = "worker rank " + std::to_string(rank);
  if (rank < 0 || static_cast<std::size_t>(rank) >= workers_) {
    return Status::Error(worker + " sent a residual, but the shard serves " +
                         std::to_string(workers_) + " workers");
  }
  if (!collecting_ || step != step_) {
    return Status::Error(worker + " sent its residual for the checkpoint before step " +
                         std::to_string(step) + ", but the shard " +
                         (collecting_ ? "collects those of step " + std::to_string(step_)
                                      : std::string("collects none")));
  }
  const auto r = static_cast<std::size_t>(rank);
  if (deposited_[r]) {
    return Status::Error(worker + " sent its residual for step " + std::to_string(step) + " twice");
  }
  if (slice.size() != range_size_) {
    return Status::Error(worker + " sent a residual of " + std::to_string(slice.size()) +
                         " floats for the shard's range of " + std::to_string(range_size_));
  }
  std::ranges::copy(slice, slices_.begin() + static_cast<long>(r * range_size_));
  deposited_[r] = true;
  return Status::Ok();
}

bool ResidualDeposits::Complete() const {
  return collecting_ && std::ranges::all_of(deposited_, [](bool d) { return d; });
}

std::vector<std::span<const float>> ResidualDeposits::Slices() const {
  std::vector<std::span<const float>> slices;
  if (!collecting_) return slices;
  for (std::size_t r = 0; r < workers_; ++r) {
    slices.push_back(std::span<const float>(slices_).subspan(r * range_size_, range_size_));
  }
  return slices;
}

void ResidualDeposits::Clear() {
  collecting_ = false;
  slices_ = {};
  deposited_.clear();
}

}  // namespace dtrain::dist
