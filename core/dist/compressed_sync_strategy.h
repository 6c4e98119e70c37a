// CompressedSyncStrategy: mode = "sync", allreduce = "ring", with [cluster] compression other
// than "none". Every step each replica weights its gradient by its share of the step's rows (as
// SyncAllReduceStrategy does), its GradientCompressor (compress/gradient_compressor.h) exchanges
// it over the ring — PowerSGD's factors by all-reduce, top-k pairs and bf16 values by all-gather,
// with error feedback — and every replica clips and steps by the same averaged gradient, so
// replicas stay bitwise identical. Stop votes ride with each step's first op.
//
//   RingAllReduce ring(rank, world, links.left, links.right);
//   CompressedSyncStrategy sync(ring, PlanCompression(model.Tensors(), settings), settings,
//                               seed, optim::MakeOptimizer(opts, 0, n), clip_norm);
//
// It is used wherever the replicas run, also all on one host (no shared-memory shortcut), so a
// job computes the same whatever its placement. The compressor's state (each replica's residual,
// PowerSGD's Q) goes into checkpoints (CheckpointState, gathered to rank 0 in slices of at most
// kGatherSlice floats per replica); Stats() adds the compression's costs to the ring's.
//
// One thread at a time (the training thread). The ring must outlive the strategy.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/compress/gradient_compressor.h"
#include "core/dist/ring_allreduce.h"
#include "core/dist/voting_allreduce.h"
#include "core/optim/optimizer.h"
#include "core/train/strategy.h"

namespace dtrain::dist {

class CompressedSyncStrategy final : public train::Strategy {
 public:
  static constexpr std::size_t kGatherSlice = 1 << 20;

  CompressedSyncStrategy(RingAllReduce& ring, std::vector<compress::TensorPlan> plan,
                         const compress::Settings& settings, std::uint64_t seed,
                         std::unique_ptr<optim::Optimizer> optimizer, float clip_norm);

  Status Apply(std::int64_t step, std::span<float> params, std::span<float> grad, float lr,
               const train::StepShare& share) override;
  optim::Optimizer* LocalOptimizer() override { return local_.LocalOptimizer(); }
  bool ProposeStop(train::StopReason reason) override {
    votes_.Propose(reason);
    return true;
  }
  std::optional<train::StopReason> AgreedStop() const override { return votes_.agreed(); }
  train::CommStats Stats() const override;

  // The compressor's state, checkpointed together (see train::Strategy): every replica's residual,
  // rank by rank, then PowerSGD's Q factors (alike on every replica).
  bool CollectiveCheckpoints() const override { return true; }
  void ProposeCheckpoint() override { votes_.ProposeCheckpoint(); }
  bool CheckpointAgreed() const override { return votes_.checkpoint_agreed(); }
  Result<std::vector<std::vector<float>>> CheckpointState() override;
  Status RestoreState(std::span<const std::span<const float>> state) override;

  compress::GradientCompressor& compressor() { return compressor_; }

 private:
  // The compressor's view of the ring: a step's first op carries the stop votes.
  class RingExchange final : public compress::GradientExchange {
   public:
    explicit RingExchange(CompressedSyncStrategy& owner) : owner_(owner) {}
    int rank() const override { return owner_.ring_.rank(); }
    int world() const override { return owner_.ring_.world(); }
    Status Mean(std::span<float> data) override;
    Status Gather(std::span<float> blocks) override;
    void BeginStep() { voted_ = false; }

   private:
    CompressedSyncStrategy& owner_;
    bool voted_ = false;
  };

  // The next op's tag: every replica counts the same ops, so they agree.
  std::uint32_t NextOp();

  RingAllReduce& ring_;  // owned by the caller, with its links
  VotingAllReduce votes_;
  compress::GradientCompressor compressor_;
  RingExchange exchange_;
  train::LocalStrategy local_;  // the clip-and-step every replica takes
  std::uint32_t op_ = 0;        // the last op's tag; every replica counts the same ops
  // What the uncompressed ring sends a step (the gradient and the votes), and so far.
  std::uint64_t ring_bytes_per_step_;
  std::uint64_t raw_ring_bytes_ = 0;
};

}  // namespace dtrain::dist
