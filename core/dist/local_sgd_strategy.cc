#include "core/dist/local_sgd_strategy.h"

namespace dtrain::dist {

LocalSgdStrategy::LocalSgdStrategy(RingAllReduce& ring, std::unique_ptr<optim::Optimizer> optimizer,
                                   float clip_norm, int average_every)
    : ring_(ring),
      local_(std::move(optimizer), clip_norm),
      average_every_(average_every < 1 ? 1 : average_every) {}

Status LocalSgdStrategy::Apply(std::int64_t step, std::span<float> params, std::span<float> grad,
                               float lr, const train::StepShare& share) {
  Status stepped = local_.Apply(step, params, grad, lr, share);
  if (!stepped.ok() || (step + 1) % average_every_ != 0) return stepped;
  const auto op = static_cast<std::uint32_t>(step % RingAllReduce::kMaxOp);
  Status averaged = ring_.AllReduceMean(params, op);
  if (!averaged.ok()) {
    return Status::Error("step " + std::to_string(step) + ": averaging the parameters: " +
                         averaged.message());
  }
  return Status::Ok();
}

}  // namespace dtrain::dist
