// VotingAllReduce: averages one buffer over a ring per op and carries the replicas' stop votes
// with it, in two floats after the payload, so agreeing on when to stop costs no extra round trip.
// Also keeps the communication totals that the collective strategies report.
//
//   VotingAllReduce exchange(ring);
//   std::span<float> payload = exchange.Payload(grad.size());   // fill it
//   Status s = exchange.Mean(op);   // payload now holds the mean; exchange.agreed() the vote
//   // or, in a caller's buffer with kVoteFloats spare floats after the payload (no copy):
//   Status s = exchange.MeanInPlace(grad, op);
//
// After Mean, agreed() is the most urgent stop any replica proposed since its previous op
// (requested over target reached), the same on every replica. One thread at a time; the ring
// must outlive this object.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/dist/ring_allreduce.h"
#include "core/dist/stop_votes.h"
#include "core/train/strategy.h"

namespace dtrain::dist {

class VotingAllReduce {
 public:
  // The votes' floats after a payload.
  static constexpr std::size_t kVoteFloats = StopVotes::kFloats;

  explicit VotingAllReduce(RingAllReduce& ring) : ring_(ring) {}

  // This replica's vote, carried by the next Mean.
  void Propose(train::StopReason reason) { votes_.Propose(reason); }
  // The first `floats` floats of the buffer the next Mean averages (valid until the next call).
  std::span<float> Payload(std::size_t floats);
  // Averages the payload (and the votes) over the ring, as op `op`.
  Status Mean(std::uint32_t op);
  // Averages `payload` in place, with the votes in the kVoteFloats floats that follow it in the
  // caller's buffer (overwritten).
  Status MeanInPlace(std::span<float> payload, std::uint32_t op);

  std::optional<train::StopReason> agreed() const { return agreed_; }
  const train::CommStats& stats() const { return stats_; }

 private:
  RingAllReduce& ring_;  // owned by the caller, with its links
  // Averages `buffer`: a payload, then the "requested" and "target reached" votes.
  Status MeanWithVotes(std::span<float> buffer, std::uint32_t op);

  std::vector<float> buffer_;  // Payload()'s, with room for the votes
  std::size_t payload_ = 0;
  StopVotes votes_;
  std::optional<train::StopReason> agreed_;
  train::CommStats stats_;
};

}  // namespace dtrain::dist
