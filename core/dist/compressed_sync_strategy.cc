#include "core/dist/compressed_sync_strategy.h"

#include "core/math/elementwise.h"

namespace dtrain::dist {

CompressedSyncStrategy::CompressedSyncStrategy(RingAllReduce& ring, MeanCollective& mean,
                                               std::vector<compress::TensorPlan> plan,
                                               const compress::Settings& settings,
                                               std::uint64_t seed,
                                               std::unique_ptr<optim::Optimizer> optimizer,
                                               float clip_norm)
    : exchange_(ring, mean),
      compressor_(std::move(plan), settings, seed),
      local_(std::move(optimizer), clip_norm),
      uncompressed_bytes_per_step_(mean.BytesSent(compress::PlanFloats(compressor_.plan()) +
                                                  VotingAllReduce::kVoteFloats)) {}

Status CompressedSyncStrategy::Apply(std::int64_t step, std::span<float> params,
                                     std::span<float> grad, float lr,
                                     const train::StepShare& share) {
  const float weight = train::ShareWeight(share, exchange_.world());
  if (weight != 1.0f) math::Scale(weight, grad);
  exchange_.BeginExchange();
  if (Status s = compressor_.Exchange(step, grad, exchange_); !s.ok()) {
    return Status::Error("step " + std::to_string(step) + ": " + s.message());
  }
  uncompressed_bytes_ += uncompressed_bytes_per_step_;
  return local_.Apply(step, params, grad, lr, share);
}

train::CommStats CompressedSyncStrategy::Stats() const {
  return exchange_.Stats(compressor_, uncompressed_bytes_);
}

Result<std::vector<std::vector<float>>> CompressedSyncStrategy::CheckpointState() {
  return exchange_.GatherState(compressor_, {});
}

Status CompressedSyncStrategy::RestoreState(std::span<const std::span<const float>> state) {
  return exchange_.RestoreState(state, compressor_, 0).status();
}

}  // namespace dtrain::dist
