#include "core/dist/voting_allreduce.h"

#include <chrono>

namespace dtrain::dist {

void VotingAllReduce::Propose(train::StopReason reason) {
  if (!proposed_ || reason == train::StopReason::kRequested) proposed_ = reason;
}

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
  float& requested = buffer[buffer.size() - 2];
  float& target = buffer[buffer.size() - 1];
  requested = proposed_ == train::StopReason::kRequested ? 1.0f : 0.0f;
  target = proposed_ == train::StopReason::kTargetReached ? 1.0f : 0.0f;
  proposed_.reset();
  const auto start = Clock::now();
  Status reduced = ring_.AllReduceMean(buffer, op);
  stats_.comm_seconds += std::chrono::duration<double>(Clock::now() - start).count();
  stats_.wait_seconds += ring_.last_op().wait_seconds;
  stats_.bytes_sent += ring_.last_op().bytes_sent;
  stats_.bytes_received += ring_.last_op().bytes_received;
  if (!reduced.ok()) return reduced;
  // Any replica's vote leaves a mean of at least 1/world > 0; no vote leaves exactly 0.
  agreed_.reset();
  if (requested > 0.0f) {
    agreed_ = train::StopReason::kRequested;
  } else if (target > 0.0f) {
    agreed_ = train::StopReason::kTargetReached;
  }
  return Status::Ok();
}

}  // namespace dtrain::dist
