// CompressedSyncStrategy: mode = "sync", allreduce = "ring", with [cluster] compression other
// than "none". Every step each replica weights its gradient by its share of the step's rows (as
// SyncAllReduceStrategy does), its GradientCompressor (compress/gradient_compressor.h) exchanges
// it over the ring — PowerSGD's factors by all-reduce (by `mean`: the ring itself, or two levels
// when each host has several replicas), top-k pairs and bf16 values by all-gather, with error
// feedback — and every replica clips and steps by the same averaged gradient, so replicas stay
// bitwise identical. Stop votes ride with each step's first op.
//
//   RingAllReduce ring(rank, world, links.left, links.right);
//   CompressedSyncStrategy sync(ring, ring, PlanCompression(model.Tensors(), settings), settings,
//                               seed, optim::MakeOptimizer(opts, 0, n), clip_norm);
//
// It is used wherever the replicas run, also all on one host (no shared-memory shortcut), so a
// job computes the same whatever its placement; where [cluster] bucket_bytes cuts the gradient
// into several buckets, OverlappedSyncStrategy compresses them during the pass instead, with the
// same checkpointed state. The compressor's state (each replica's residual,
// PowerSGD's Q) goes into checkpoints (CheckpointState, gathered to rank 0 by CompressingRing);
// Stats() adds the compression's costs to the ring's.
//
// One thread at a time (the training thread). The ring and the mean must outlive the strategy.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/compress/gradient_compressor.h"
#include "core/dist/compressing_ring.h"
#include "core/dist/ring_allreduce.h"
#include "core/optim/optimizer.h"
#include "core/train/strategy.h"

namespace dtrain::dist {

class CompressedSyncStrategy final : public train::Strategy {
 public:
  CompressedSyncStrategy(RingAllReduce& ring, MeanCollective& mean,
                         std::vector<compress::TensorPlan> plan, const compress::Settings& settings,
                         std::uint64_t seed, std::unique_ptr<optim::Optimizer> optimizer,
                         float clip_norm);

  Status Apply(std::int64_t step, std::span<float> params, std::span<float> grad, float lr,
               const train::StepShare& share) override;
  optim::Optimizer* LocalOptimizer() override { return local_.LocalOptimizer(); }
  bool ProposeStop(train::StopReason reason) override {
    exchange_.votes().Propose(reason);
    return true;
  }
  std::optional<train::StopReason> AgreedStop() const override {
    return exchange_.votes().agreed();
  }
  train::CommStats Stats() const override;
  // PowerSGD's passes over the gradient's matrices run on the team (the same bits as alone).
  void ShareThreads(math::ThreadTeam& team) override { compressor_.ShareThreads(team); }

  // The compressor's state, checkpointed together (see train::Strategy): every replica's residual,
  // rank by rank, then PowerSGD's Q factors (alike on every replica).
  bool CollectiveCheckpoints() const override { return true; }
  void ProposeCheckpoint() override { exchange_.votes().ProposeCheckpoint(); }
  bool CheckpointAgreed() const override { return exchange_.votes().checkpoint_agreed(); }
  Result<std::vector<std::vector<float>>> CheckpointState() override;
  Status RestoreState(std::span<const std::span<const float>> state) override;

  compress::GradientCompressor& compressor() { return compressor_; }

 private:
  CompressingRing exchange_;  // the compressor's view of the ring (the caller's), with the votes
  compress::GradientCompressor compressor_;
  train::LocalStrategy local_;  // the clip-and-step every replica takes
  // What the uncompressed mean sends a step (the gradient and the votes), and so far.
  std::uint64_t uncompressed_bytes_per_step_;
  std::uint64_t uncompressed_bytes_ = 0;
};

}  // namespace dtrain::dist
