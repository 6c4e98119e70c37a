#include "core/dist/voting_allreduce.h"

#include <chrono>

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

Status VotingAllReduce::MeanWithVotes(std::span<float> buffer, std::uint32_t op) {
  const std::span<float, kVoteFloats> votes = buffer.last<kVoteFloats>();
  votes_.Cast(votes);
  const auto start = Clock::now();
  Status reduced = ring_.AllReduceMean(buffer, op);
  stats_.comm_seconds += std::chrono::duration<double>(Clock::now() - start).count();
  stats_.wait_seconds += ring_.last_op().wait_seconds;
  stats_.bytes_sent += ring_.last_op().bytes_sent;
  stats_.bytes_received += ring_.last_op().bytes_received;
  if (!reduced.ok()) return reduced;
  agreed_ = StopVotes::Agreed(votes[0], votes[1]);
  return Status::Ok();
}

}  // namespace dtrain::dist
