// VotingAllReduce: averages one buffer over the replicas (a ring, or any MeanCollective) per op and
// carries the replicas' stop votes and checkpoint votes with it, in four floats after the payload
// (three stop votes, one checkpoint vote), so agreeing on when to stop (or to take a checkpoint
// whose state every replica holds a part of) costs no extra round trip. Also keeps the
// communication totals that the collective strategies report.
//
//   VotingAllReduce exchange(ring);
//   std::span<float> payload = exchange.Payload(grad.size());   // fill it
//   Status s = exchange.Mean(op);   // payload now holds the mean; exchange.agreed() the vote
//   // or, in a caller's buffer with kVoteFloats spare floats after the payload (no copy):
//   Status s = exchange.MeanInPlace(grad, op);
//   // or an all-gather of equal blocks, each replica's votes beside its block (copied once):
//   Status s = exchange.Gather(blocks, op);
//   // or, over two levels (mean.levels()), a gather of host sums, the votes beside the chunks:
//   Status s = exchange.GatherHostSums(range, codec, op, /*vote=*/true);
//   // and ops that carry no votes (a step's second exchange): agreed() stays as it was
//   Status s = exchange.MeanWithoutVotes(data, op);   // or GatherWithoutVotes(blocks, op)
//
// After Mean, agreed() is the most urgent stop any replica proposed since its previous op
// (requested over target reached), and checkpoint_agreed() whether any replica proposed a
// checkpoint, the same on every replica. One thread at a time; the ring
// must outlive this object.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "core/compress/chunk_codec.h"
#include "core/dist/ring_allreduce.h"
#include "core/dist/stop_votes.h"
#include "core/train/strategy.h"

namespace dtrain::dist {

class VotingAllReduce {
 public:
  // The votes' floats after a payload: the stop votes, then the checkpoint vote.
  static constexpr std::size_t kVoteFloats = StopVotes::kFloats + 1;

  explicit VotingAllReduce(RingAllReduce& ring) : mean_(ring), ring_(&ring) {}
  // Means only: Gather and GatherWithoutVotes must not be called.
  explicit VotingAllReduce(MeanCollective& mean) : mean_(mean), ring_(nullptr) {}
  // Means by `mean`, gathers over `ring`: the same replicas, in the same rank order.
  VotingAllReduce(MeanCollective& mean, RingAllReduce& ring) : mean_(mean), ring_(&ring) {}

  // This replica's vote, carried by the next Mean.
  void Propose(train::StopReason reason) { votes_.Propose(reason); }
  // This replica's wish for a checkpoint after the step of the next voting op.
  void ProposeCheckpoint() { checkpoint_proposed_ = true; }
  // The first `floats` floats of the buffer the next Mean averages (valid until the next call).
  std::span<float> Payload(std::size_t floats);
  // Averages the payload (and the votes) over the ring, as op `op`.
  Status Mean(std::uint32_t op);
  // Averages `payload` in place, with the votes in the kVoteFloats floats that follow it in the
  // caller's buffer (overwritten).
  Status MeanInPlace(std::span<float> payload, std::uint32_t op);
  // RingAllReduce::AllGather of `blocks` (world equal blocks, this replica's at its rank), each
  // replica's votes travelling after its block.
  Status Gather(std::span<float> blocks, std::uint32_t op);
  // Whether GatherHostSums runs: the mean has two levels.
  bool SumsWithinHost() const { return mean_.levels() != nullptr; }
  // HierarchicalAllReduce::GatherHostSums of `data` through `codec`, with the votes when `vote`.
  Status GatherHostSums(std::span<float> data, compress::ChunkCodec& codec, std::uint32_t op,
                        bool vote);
  // Averages `data` over the ring without votes.
  Status MeanWithoutVotes(std::span<float> data, std::uint32_t op);
  // RingAllReduce::AllGather of `blocks` without votes (in place, no copy).
  Status GatherWithoutVotes(std::span<float> blocks, std::uint32_t op);

  // For an exchange that runs its own ops (OverlappedSyncStrategy): writes this replica's votes
  // into `tail` and forgets its proposals; then, once the tails are summed or averaged over the
  // replicas, reads the agreement from them.
  void Cast(std::span<float, kVoteFloats> tail);
  void Read(const float* tail);

  std::optional<train::StopReason> agreed() const { return agreed_; }
  bool checkpoint_agreed() const { return checkpoint_agreed_; }
  const train::CommStats& stats() const { return stats_; }

 private:
  MeanCollective& mean_;  // owned by the caller, with its links
  RingAllReduce* ring_;   // what gathers (often mean_ itself); null: no gathers
  // Averages `buffer`: a payload, then the "requested", "target reached" and checkpoint votes.
  Status MeanWithVotes(std::span<float> buffer, std::uint32_t op);
  // Runs `op` (an op of `by`) and adds its costs to stats_.
  template <typename Op>
  Status Counted(const MeanCollective& by, Op op);

  std::vector<float> buffer_;  // Payload()'s, with room for the votes (Gather's: for each's)
  std::size_t payload_ = 0;
  StopVotes votes_;
  std::optional<train::StopReason> agreed_;
  bool checkpoint_proposed_ = false;
  bool checkpoint_agreed_ = false;
  train::CommStats stats_;
};

}  // namespace dtrain::dist
