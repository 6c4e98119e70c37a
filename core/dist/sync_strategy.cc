#include "core/dist/sync_strategy.h"

#include "core/dist/ring_allreduce.h"
#include "core/math/elementwise.h"

namespace dtrain::dist {

SyncAllReduceStrategy::SyncAllReduceStrategy(MeanCollective& mean,
                                             std::unique_ptr<optim::Optimizer> optimizer,
                                             float clip_norm)
    : exchange_(mean), mean_(mean), local_(std::move(optimizer), clip_norm) {}

Status SyncAllReduceStrategy::Apply(std::int64_t step, std::span<float> params,
                                    std::span<float> grad, float lr,
                                    const train::StepShare& share) {
  const float weight = train::ShareWeight(share, mean_.world());
  if (weight != 1.0f) math::Scale(weight, grad);
  const auto op = static_cast<std::uint32_t>(step % RingAllReduce::kMaxOp);
  Status reduced = exchange_.MeanInPlace(grad, op);  // the votes ride in the GradientTail()
  if (!reduced.ok()) return Status::Error("step " + std::to_string(step) + ": " + reduced.message());
  return local_.Apply(step, params, grad, lr, share);
}

}  // namespace dtrain::dist
