#include "core/dist/voting_allreduce.h"

#include <algorithm>
#include <cassert>
#include <chrono>

#include "core/dist/hierarchical_allreduce.h"

namespace dtrain::dist {

std::span<float> VotingAllReduce::Payload(std::size_t floats) {
  payload_ = floats;
  if (buffer_.size() != floats + kVoteFloats) buffer_.assign(floats + kVoteFloats, 0.0f);
  return std::span<float>(buffer_).first(floats);
}

Status VotingAllReduce::Mean(std::uint32_t op) {
  return MeanWithVotes(std::span<float>(buffer_).first(payload_ + kVoteFloats), op);
}

Status VotingAllReduce::MeanInPlace(std::span<float> payload, std::uint32_t op) {
  return MeanWithVotes(std::span<float>(payload.data(), payload.size() + kVoteFloats), op);
}

template <typename Op>
Status VotingAllReduce::Counted(const MeanCollective& by, Op op) {
  const auto start = Clock::now();
  Status done = op();
  stats_.comm_seconds += std::chrono::duration<double>(Clock::now() - start).count();
  const RingOpStats cost = by.LastCost();
  stats_.wait_seconds += cost.wait_seconds;
  stats_.bytes_sent += cost.bytes_sent;
  stats_.bytes_received += cost.bytes_received;
  return done;
}

void VotingAllReduce::Cast(std::span<float, kVoteFloats> tail) {
  votes_.Cast(tail.first<StopVotes::kFloats>());
  tail[StopVotes::kFloats] = checkpoint_proposed_ ? 1.0f : 0.0f;
  checkpoint_proposed_ = false;
}

void VotingAllReduce::Read(const float* tail) {
  agreed_ = StopVotes::Agreed(std::span<const float, StopVotes::kFloats>(tail, StopVotes::kFloats));
  checkpoint_agreed_ = tail[StopVotes::kFloats] > 0.0f;
}

Status VotingAllReduce::MeanWithVotes(std::span<float> buffer, std::uint32_t op) {
  const std::span<float, kVoteFloats> votes = buffer.last<kVoteFloats>();
  Cast(votes);
  Status reduced = Counted(mean_, [&] { return mean_.AllReduceMean(buffer, op); });
  if (!reduced.ok()) return reduced;
  Read(votes.data());
  return Status::Ok();
}

Status VotingAllReduce::MeanWithoutVotes(std::span<float> data, std::uint32_t op) {
  return Counted(mean_, [&] { return mean_.AllReduceMean(data, op); });
}

Status VotingAllReduce::GatherHostSums(std::span<float> data, compress::ChunkCodec& codec,
                                       std::uint32_t op, bool vote) {
  HierarchicalAllReduce* levels = mean_.levels();
  assert(levels != nullptr);
  float votes[kVoteFloats] = {};
  if (vote) Cast(votes);
  Status gathered = Counted(mean_, [&] {
    return levels->GatherHostSums(data, codec, std::span<float>(votes, vote ? kVoteFloats : 0), op);
  });
  if (!gathered.ok()) return gathered;
  if (vote) Read(votes);
  return Status::Ok();
}

Status VotingAllReduce::GatherWithoutVotes(std::span<float> blocks, std::uint32_t op) {
  assert(ring_ != nullptr);
  return Counted(*ring_, [&] { return ring_->AllGather(blocks, op); });
}

Status VotingAllReduce::Gather(std::span<float> blocks, std::uint32_t op) {
  assert(ring_ != nullptr);
  const auto world = static_cast<std::size_t>(ring_->world());
  const std::size_t block = blocks.size() / world;
  const std::size_t stride = block + kVoteFloats;
  if (buffer_.size() != world * stride) buffer_.assign(world * stride, 0.0f);
  const auto own = static_cast<std::size_t>(ring_->rank());
  std::copy_n(blocks.data() + own * block, block, buffer_.data() + own * stride);
  Cast(std::span<float, kVoteFloats>(buffer_.data() + own * stride + block, kVoteFloats));
  Status gathered = Counted(*ring_, [&] { return ring_->AllGather(buffer_, op); });
  if (!gathered.ok()) return gathered;
  float votes[kVoteFloats] = {};
  for (std::size_t r = 0; r < world; ++r) {
    const float* from = buffer_.data() + r * stride;
    std::copy_n(from, block, blocks.data() + r * block);
    for (std::size_t v = 0; v < kVoteFloats; ++v) votes[v] += from[block + v];
  }
  Read(votes);
  return Status::Ok();
}

}  // namespace dtrain::dist
