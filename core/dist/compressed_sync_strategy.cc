#include "core/dist/compressed_sync_strategy.h"

#include <algorithm>

#include "core/math/elementwise.h"

namespace dtrain::dist {

CompressedSyncStrategy::CompressedSyncStrategy(
    RingAllReduce& ring, std::vector<compress::TensorPlan> plan, const compress::Settings& settings,
    std::uint64_t seed, std::unique_ptr<optim::Optimizer> optimizer, float clip_norm)
    : ring_(ring),
      votes_(ring),
      compressor_(std::move(plan), settings, seed),
      exchange_(*this),
      local_(std::move(optimizer), clip_norm),
      ring_bytes_per_step_(ring.ReduceBytesSent(compress::PlanFloats(compressor_.plan()) +
                                                VotingAllReduce::kVoteFloats)) {}

Status CompressedSyncStrategy::Apply(std::int64_t step, std::span<float> params,
                                     std::span<float> grad, float lr,
                                     const train::StepShare& share) {
  const float weight = train::ShareWeight(share, ring_.world());
  if (weight != 1.0f) math::Scale(weight, grad);
  exchange_.BeginStep();
  if (Status s = compressor_.Exchange(step, grad, exchange_); !s.ok()) {
    return Status::Error("step " + std::to_string(step) + ": " + s.message());
  }
  raw_ring_bytes_ += ring_bytes_per_step_;
  return local_.Apply(step, params, grad, lr, share);
}

train::CommStats CompressedSyncStrategy::Stats() const {
  train::CommStats s = votes_.stats();
  s.compressed = true;
  s.compression_seconds = compressor_.stats().seconds;
  s.uncompressed_bytes = raw_ring_bytes_;
  return s;
}

Result<std::vector<std::vector<float>>> CompressedSyncStrategy::CheckpointState() {
  const std::vector<std::span<float>> own = compressor_.StateVectors();
  const std::span<const float> residual = own.front();
  const auto world = static_cast<std::size_t>(ring_.world());
  const auto rank = static_cast<std::size_t>(ring_.rank());
  std::vector<std::vector<float>> state;
  if (rank == 0) state.resize(world);
  // Every replica's residual, a slice at a time, so that only rank 0 holds them all.
  std::vector<float> blocks;
  for (std::size_t at = 0; at < residual.size(); at += kGatherSlice) {
    const std::size_t slice = std::min(kGatherSlice, residual.size() - at);
    blocks.assign(world * slice, 0.0f);
    std::copy_n(residual.data() + at, slice, blocks.data() + rank * slice);
    if (Status s = ring_.AllGather(blocks, NextOp()); !s.ok()) {
      return Status::Error("gathering the replicas' residuals: " + s.message());
    }
    for (std::size_t r = 0; r < state.size(); ++r) {
      state[r].insert(state[r].end(), blocks.begin() + static_cast<long>(r * slice),
                      blocks.begin() + static_cast<long>((r + 1) * slice));
    }
  }
  if (rank != 0) return std::vector<std::vector<float>>{};
  for (std::size_t i = 1; i < own.size(); ++i) state.emplace_back(own[i].begin(), own[i].end());
  return state;
}

Status CompressedSyncStrategy::RestoreState(std::span<const std::span<const float>> state) {
  std::vector<std::span<float>> own = compressor_.StateVectors();
  const auto world = static_cast<std::size_t>(ring_.world());
  if (state.size() != world + own.size() - 1) {
    return Status::Error("the checkpoint holds " + std::to_string(state.size()) +
                         " compression state vectors; " + std::to_string(world) +
                         " workers compressing this model need " +
                         std::to_string(world + own.size() - 1));
  }
  // This replica's residual, then the factors, which every replica shares.
  std::vector<std::span<const float>> mine{state[static_cast<std::size_t>(ring_.rank())]};
  mine.insert(mine.end(), state.begin() + static_cast<long>(world), state.end());
  for (std::size_t i = 0; i < own.size(); ++i) {
    if (mine[i].size() != own[i].size()) {
      return Status::Error("compression state vector " + std::to_string(i) + " holds " +
                           std::to_string(mine[i].size()) + " floats, not " +
                           std::to_string(own[i].size()));
    }
    std::copy(mine[i].begin(), mine[i].end(), own[i].begin());
  }
  return Status::Ok();
}

std::uint32_t CompressedSyncStrategy::NextOp() {
  op_ = op_ >= RingAllReduce::kMaxOp ? 1 : op_ + 1;
  return op_;
}

Status CompressedSyncStrategy::RingExchange::Mean(std::span<float> data) {
  const std::uint32_t op = owner_.NextOp();
  if (voted_) return owner_.votes_.MeanWithoutVotes(data, op);
  voted_ = true;
  std::span<float> payload = owner_.votes_.Payload(data.size());
  std::copy(data.begin(), data.end(), payload.begin());
  if (Status s = owner_.votes_.Mean(op); !s.ok()) return s;
  std::copy(payload.begin(), payload.end(), data.begin());
  return Status::Ok();
}

Status CompressedSyncStrategy::RingExchange::Gather(std::span<float> blocks) {
  const std::uint32_t op = owner_.NextOp();
  if (voted_) {
    return Status::Error("a compressed step gathers once, first (compress/gradient_compressor.h)");
  }
  voted_ = true;
  return owner_.votes_.Gather(blocks, op);
}

}  // namespace dtrain::dist
