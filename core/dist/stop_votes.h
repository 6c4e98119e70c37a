// StopVotes: a replica's proposal to stop, as the three floats a collective step carries beside
// its payload ("requested", "target reached", "early stopped"), and the agreement read back from
// those floats summed (or averaged) over every replica: the most urgent reason any replica
// proposed, requested over target reached over early stopped, the same on every replica.
//
//   votes.Propose(StopReason::kTargetReached);
//   votes.Cast(std::span<float, StopVotes::kFloats>(tail));  // before the exchange; forgets it
//   ... the exchange sums or averages the tails of all replicas ...
//   std::optional<StopReason> stop = StopVotes::Agreed(tail);
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
  static constexpr std::size_t kFloats = 3;

  // Keeps the most urgent reason proposed since the last Cast.
  void Propose(train::StopReason reason) {
    if (train::StopVote(reason) > train::StopVote(proposed_)) proposed_ = reason;
  }
  // Writes this replica's votes (1 or 0 each) and forgets its proposal.
  void Cast(std::span<float, kFloats> tail) {
    tail[0] = proposed_ == train::StopReason::kRequested ? 1.0f : 0.0f;
    tail[1] = proposed_ == train::StopReason::kTargetReached ? 1.0f : 0.0f;
    tail[2] = proposed_ == train::StopReason::kEarlyStopped ? 1.0f : 0.0f;
    proposed_.reset();
  }
  // The agreement, from the votes summed or averaged over the replicas: any replica's vote leaves
  // at least 1/world > 0, none leaves exactly 0.
  static std::optional<train::StopReason> Agreed(std::span<const float, kFloats> votes) {
    if (votes[0] > 0.0f) return train::StopReason::kRequested;
    if (votes[1] > 0.0f) return train::StopReason::kTargetReached;
    if (votes[2] > 0.0f) return train::StopReason::kEarlyStopped;
    return std::nullopt;
  }

 private:
  std::optional<train::StopReason> proposed_;
};

}  // namespace dtrain::dist
