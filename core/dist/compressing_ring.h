// CompressingRing: the replicas' ring as a compressor's collective (compress::GradientExchange),
// for the strategies that compress what their replicas exchange over a ring (sync's gradients,
// local's parameter changes). Its Means run on the ring, or on a MeanCollective over the same
// replicas (two levels, for a job with several replicas on each host: PowerSGD's factors then
// cross the network once per host); its Gathers and the checkpoint's on the ring. The first op of
// each exchange carries the stop and checkpoint votes (VotingAllReduce); every replica counts the
// same ops, so their tags agree. It also moves a
// compressor's state to and from a checkpoint: every replica's residual, gathered to rank 0 in
// slices of at most kGatherSlice floats per replica, then the state every replica shares
// (PowerSGD's Q, and whatever the strategy adds), which rank 0 writes once.
//
//   CompressingRing exchange(ring);           // or exchange(ring, two_level)
//   exchange.BeginExchange();
//   Status s = compressor.Exchange(step, grad, exchange);   // votes ride with its first op
//   exchange.votes().agreed();
//   Result<std::vector<std::vector<float>>> state = exchange.GatherState(compressor, {anchor});
//
// Checkpointed state, in order: world residuals (rank by rank), the compressor's shared vectors,
// then the caller's shared vectors. One thread at a time; the ring must outlive this object.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/compress/gradient_compressor.h"
#include "core/dist/ring_allreduce.h"
#include "core/dist/voting_allreduce.h"

namespace dtrain::dist {

class CompressingRing final : public compress::GradientExchange {
 public:
  static constexpr std::size_t kGatherSlice = 1 << 20;

  explicit CompressingRing(RingAllReduce& ring) : ring_(ring), votes_(ring) {}
  // Means by `mean` (over the ring's replicas, in its rank order), the rest on `ring`.
  CompressingRing(RingAllReduce& ring, MeanCollective& mean) : ring_(ring), votes_(mean, ring) {}

  int rank() const override { return ring_.rank(); }
  int world() const override { return ring_.world(); }
  // The first Mean or Gather after BeginExchange carries the votes, the others none (an
  // overlapped step's later buckets).
  Status Mean(std::span<float> data) override;
  Status Gather(std::span<float> blocks) override;
  // Over two levels (the mean's levels()): each host's sum compressed once (bf16, top-k).
  bool SumsWithinHost() const override { return votes_.SumsWithinHost(); }
  Status GatherHostSums(std::span<float> data, compress::ChunkCodec& codec) override;
  void BeginExchange() { voted_ = false; }
  // A Mean that never carries votes (state averaged beside a compressed exchange).
  Status MeanWithoutVotes(std::span<float> data);

  VotingAllReduce& votes() { return votes_; }
  const VotingAllReduce& votes() const { return votes_; }
  RingAllReduce& ring() { return ring_; }

  // The ops' costs with a compressor's: `uncompressed_bytes`, what the means would have sent
  // without compression.
  train::CommStats Stats(const compress::GradientCompressor& compressor,
                         std::uint64_t uncompressed_bytes) const;

  // Collective: every replica calls it at the same step. Rank 0 gets the whole state (see above),
  // the others none.
  Result<std::vector<std::vector<float>>> GatherState(
      compress::GradientCompressor& compressor, std::span<const std::span<const float>> shared);
  // Takes this replica's part of what GatherState gave (with `shared_vectors` of the caller's):
  // its residual and the compressor's vectors into `compressor`; returns the caller's vectors.
  Result<std::vector<std::span<const float>>> RestoreState(
      std::span<const std::span<const float>> state, compress::GradientCompressor& compressor,
      std::size_t shared_vectors) const;

 private:
  std::uint32_t NextOp();

  RingAllReduce& ring_;  // owned by the caller, with its links
  VotingAllReduce votes_;
  std::uint32_t op_ = 0;  // the last op's tag
  bool voted_ = false;
};

}  // namespace dtrain::dist
