#include "core/train/strategy.h"

#include "core/optim/clip.h"

namespace dtrain::train {

std::uint32_t StopVote(std::optional<StopReason> reason) {
  if (!reason) return 0;
  switch (*reason) {
    case StopReason::kEarlyStopped:
      return 1;
    case StopReason::kTargetReached:
      return 2;
    case StopReason::kRequested:
    case StopReason::kCompleted:  // never proposed
      break;
  }
  return 3;
}

std::optional<StopReason> FromStopVote(std::uint32_t vote) {
  switch (vote) {
    case 0:
      return std::nullopt;
    case 1:
      return StopReason::kEarlyStopped;
    case 2:
      return StopReason::kTargetReached;
    default:
      return StopReason::kRequested;
  }
}

float ShareWeight(const StepShare& share, int world) {
  const auto replicas = static_cast<std::size_t>(world);
  if (share.total_rows == 0 || share.rows * replicas == share.total_rows) return 1.0f;
  return static_cast<float>(static_cast<double>(share.rows) * world /
                            static_cast<double>(share.total_rows));
}

LocalStrategy::LocalStrategy(std::unique_ptr<optim::Optimizer> optimizer, float clip_norm)
    : optimizer_(std::move(optimizer)), clip_norm_(clip_norm) {}

Status LocalStrategy::Apply(std::int64_t /*step*/, std::span<float> params,
                            std::span<float> grad, float lr, const StepShare& /*share*/) {
  if (clip_norm_ > 0.0f) optim::ClipByGlobalNorm(grad, clip_norm_);
  optimizer_->Step(params, grad, lr);
  return Status::Ok();
}

}  // namespace dtrain::train
