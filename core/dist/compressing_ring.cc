#include "core/dist/compressing_ring.h"

#include <algorithm>
#include <string>

namespace dtrain::dist {

Status CompressingRing::Mean(std::span<float> data) {
  const std::uint32_t op = NextOp();
  if (voted_) return votes_.MeanWithoutVotes(data, op);
  voted_ = true;
  std::span<float> payload = votes_.Payload(data.size());
  std::copy(data.begin(), data.end(), payload.begin());
  if (Status s = votes_.Mean(op); !s.ok()) return s;
  std::copy(payload.begin(), payload.end(), data.begin());
  return Status::Ok();
}

Status CompressingRing::Gather(std::span<float> blocks) {
  const std::uint32_t op = NextOp();
  if (voted_) return votes_.GatherWithoutVotes(blocks, op);
  voted_ = true;
  return votes_.Gather(blocks, op);
}

Status CompressingRing::GatherHostSums(std::span<float> data, compress::ChunkCodec& codec) {
  const bool vote = !voted_;
  voted_ = true;
  return votes_.GatherHostSums(data, codec, NextOp(), vote);
}

Status CompressingRing::MeanWithoutVotes(std::span<float> data) {
  return votes_.MeanWithoutVotes(data, NextOp());
}

train::CommStats CompressingRing::Stats(const compress::GradientCompressor& compressor,
                                        std::uint64_t uncompressed_bytes) const {
  train::CommStats s = votes_.stats();
  s.compressed = true;
  s.compression_seconds = compressor.stats().seconds;
  s.uncompressed_bytes = uncompressed_bytes;
  return s;
}

Result<std::vector<std::vector<float>>> CompressingRing::GatherState(
    compress::GradientCompressor& compressor, std::span<const std::span<const float>> shared) {
  const std::vector<std::span<float>> own = compressor.StateVectors();
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
  for (std::span<const float> v : shared) state.emplace_back(v.begin(), v.end());
  return state;
}

Result<std::vector<std::span<const float>>> CompressingRing::RestoreState(
    std::span<const std::span<const float>> state, compress::GradientCompressor& compressor,
    std::size_t shared_vectors) const {
  std::vector<std::span<float>> own = compressor.StateVectors();
  const auto world = static_cast<std::size_t>(ring_.world());
  const std::size_t needed = world + own.size() - 1 + shared_vectors;
  if (state.size() != needed) {
    return Status::Error("the checkpoint holds " + std::to_string(state.size()) +
                         " compression state vectors; " + std::to_string(world) +
                         " workers compressing this model need " + std::to_string(needed));
  }
  // This replica's residual, then the factors, which every replica shares.
  std::vector<std::span<const float>> mine{state[static_cast<std::size_t>(ring_.rank())]};
  mine.insert(mine.end(), state.begin() + static_cast<long>(world),
              state.begin() + static_cast<long>(world + own.size() - 1));
  for (std::size_t i = 0; i < own.size(); ++i) {
    if (mine[i].size() != own[i].size()) {
      return Status::Error("compression state vector " + std::to_string(i) + " holds " +
                           std::to_string(mine[i].size()) + " floats, not " +
                           std::to_string(own[i].size()));
    }
  }
  for (std::size_t i = 0; i < own.size(); ++i) std::ranges::copy(mine[i], own[i].begin());
  return std::vector<std::span<const float>>(state.end() - static_cast<long>(shared_vectors),
                                             state.end());
}

std::uint32_t CompressingRing::NextOp() {
  op_ = op_ >= RingAllReduce::kMaxOp ? 1 : op_ + 1;
  return op_;
}

}  // namespace dtrain::dist
