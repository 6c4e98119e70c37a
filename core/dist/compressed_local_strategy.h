// CompressedLocalStrategy: mode = "local" with [cluster] compression other than "none". Replicas
// step alone as LocalSgdStrategy's do; every `average_every` steps, instead of averaging their
// parameters, they average each one's change since the last average (params - anchor, where the
// anchor, the parameters right after the last average, is the same on every replica) through a
// GradientCompressor, with error feedback per replica, exactly as sync compresses a gradient.
// Then params = anchor + the mean change, which is the same bits on every replica, and becomes
// the next anchor. With average_optimizer the optimizer state is averaged as it is, uncompressed,
// beside the compressed change.
//
//   CompressedLocalStrategy local(ring, PlanCompression(model.Tensors(), settings), settings,
//                                 seed, optim::MakeOptimizer(opts, 0, n), clip_norm,
//                                 {.average_every = 8});
//
// compression_warmup_steps counts steps: an average before it exchanges the change uncompressed.
// Stop and checkpoint votes ride with the averages (CompressingRing), so the replicas stop, and
// checkpoint on agreement, right after an average. Checkpoints keep every replica's residual,
// PowerSGD's Q and the anchor (empty before the first step: the parameters the run starts from),
// so a resume continues with the same residuals and the same anchor.
//
// One thread at a time (the training thread). The ring must outlive the strategy.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "core/compress/gradient_compressor.h"
#include "core/dist/compressing_ring.h"
#include "core/dist/ring_allreduce.h"
#include "core/optim/optimizer.h"
#include "core/train/strategy.h"

namespace dtrain::dist {

struct AveragingOptions {
  int average_every = 8;           // steps between averages (>= 1)
  bool average_optimizer = false;  // average the optimizer state too
};

class CompressedLocalStrategy final : public train::Strategy {
 public:
  CompressedLocalStrategy(RingAllReduce& ring, std::vector<compress::TensorPlan> plan,
                          const compress::Settings& settings, std::uint64_t seed,
                          std::unique_ptr<optim::Optimizer> optimizer, float clip_norm,
                          AveragingOptions averaging);

  Status Apply(std::int64_t step, std::span<float> params, std::span<float> grad, float lr,
               const train::StepShare& share) override;
  optim::Optimizer* LocalOptimizer() override { return local_.LocalOptimizer(); }
  bool ProposeStop(train::StopReason reason) override {
    exchange_.votes().Propose(reason);
    return true;
  }
  std::optional<train::StopReason> AgreedStop() const override { return agreed_; }
  train::CommStats Stats() const override;
  // The compressor's passes over the change split among the network's threads (the same bits).
  void ShareThreads(math::ThreadTeam& team) override { compressor_.ShareThreads(team); }

  // Every replica's residual, rank by rank, PowerSGD's Q, then the anchor (see above).
  bool CollectiveCheckpoints() const override { return true; }
  void ProposeCheckpoint() override { exchange_.votes().ProposeCheckpoint(); }
  bool CheckpointAgreed() const override { return checkpoint_agreed_; }
  Result<std::vector<std::vector<float>>> CheckpointState() override;
  Status RestoreState(std::span<const std::span<const float>> state) override;

  compress::GradientCompressor& compressor() { return compressor_; }

 private:
  // params becomes anchor + the replicas' mean change; the anchor follows.
  Status Average(std::int64_t step, std::span<float> params);
  // The optimizer's state vectors, averaged as they are.
  Status AverageOptimizer();

  CompressingRing exchange_;  // over the caller's ring, which also owns its links
  compress::GradientCompressor compressor_;
  train::LocalStrategy local_;  // the step every replica takes alone
  AveragingOptions averaging_;
  std::vector<float> anchor_;  // the parameters after the last average; empty until known
  std::vector<float> change_;  // an average's buffer: params - anchor, then the mean change
  std::vector<float> state_;   // an average's buffer for the optimizer state
  std::optional<train::StopReason> agreed_;  // at the last step
  bool checkpoint_agreed_ = false;           // at the last step
  // What an uncompressed average sends (the parameters, the state and the votes), and so far.
  std::uint64_t ring_bytes_per_average_ = 0;
  std::uint64_t raw_ring_bytes_ = 0;
};

}  // namespace dtrain::dist
