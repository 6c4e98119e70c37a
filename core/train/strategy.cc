#include "core/train/strategy.h"

#include "core/optim/clip.h"

namespace dtrain::train {

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
