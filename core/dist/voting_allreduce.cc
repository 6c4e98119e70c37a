#include "core/dist/voting_allreduce.h"

#include <chrono>

namespace dtrain::dist {

void VotingAllReduce::Propose(train::StopReason reason) {
  if (!proposed_ || reason == train::StopReason::kRequested) proposed_ = reason;
}

std::span<float> VotingAllReduce::Payload(std::size_t floats) {
  payload_ = floats;
  if (buffer_.size() != floats + 2) buffer_.assign(floats + 2, 0.0f);
  return std::span<float>(buffer_).first(floats);
}

Status VotingAllReduce::Mean(std::uint32_t op) {
  buffer_[payload_] = proposed_ == train::StopReason::kRequested ? 1.0f : 0.0f;
  buffer_[payload_ + 1] = proposed_ == train::StopReason::kTargetReached ? 1.0f : 0.0f;
  proposed_.reset();
  const auto start = Clock::now();
  Status reduced = ring_.AllReduceMean(buffer_, op);
  stats_.comm_seconds += std::chrono::duration<double>(Clock::now() - start).count();
  stats_.wait_seconds += ring_.last_op().wait_seconds;
  stats_.bytes_sent += ring_.last_op().bytes_sent;
  stats_.bytes_received += ring_.last_op().bytes_received;
  if (!reduced.ok()) return reduced;
  // Any replica's vote leaves a mean of at least 1/world > 0; no vote leaves exactly 0.
  agreed_.reset();
  if (buffer_[payload_] > 0.0f) {
    agreed_ = train::StopReason::kRequested;
  } else if (buffer_[payload_ + 1] > 0.0f) {
    agreed_ = train::StopReason::kTargetReached;
  }
  return Status::Ok();
}

}  // namespace dtrain::dist
