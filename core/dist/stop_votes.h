// StopVotes: a replica's proposal to stop, as the two floats a collective step carries beside its
// payload ("requested", "target reached"), and the agreement read back from those floats summed
// (or averaged) over every replica: the most urgent reason any replica proposed, requested over
// target reached, the same on every replica.
//
//   votes.Propose(StopReason::kTargetReached);
//   votes.Cast(std::span<float, 2>(tail));        // before the exchange; forgets the proposal
//   ... the exchange sums or averages the tails of all replicas ...
//   std::optional<StopReason> stop = StopVotes::Agreed(tail[0], tail[1]);
//
// One thread at a time.
#pragma once

#include <cstddef>
#include <optional>
#include <span>

#include "core/train/strategy.h"

namespace dtrain::dist {

class StopVotes {
 public:
  static constexpr std::size_t kFloats = 2;

  // Keeps the most urgent reason proposed since the last Cast.
  void Propose(train::StopReason reason) {
    if (!proposed_ || reason == train::StopReason::kRequested) proposed_ = reason;
  }
  // Writes this replica's votes (1 or 0 each) and forgets its proposal.
  void Cast(std::span<float, kFloats> tail) {
    tail[0] = proposed_ == train::StopReason::kRequested ? 1.0f : 0.0f;
    tail[1] = proposed_ == train::StopReason::kTargetReached ? 1.0f : 0.0f;
    proposed_.reset();
  }
  // The agreement, from the votes summed or averaged over the replicas: any replica's vote leaves
  // at least 1/world > 0, none leaves exactly 0.
  static std::optional<train::StopReason> Agreed(float requested, float target) {
    if (requested > 0.0f) return train::StopReason::kRequested;
    if (target > 0.0f) return train::StopReason::kTargetReached;
    return std::nullopt;
  }

 private:
  std::optional<train::StopReason> proposed_;
};

}  // namespace dtrain::dist
