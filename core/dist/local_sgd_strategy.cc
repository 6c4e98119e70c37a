#include "core/dist/local_sgd_strategy.h"

#include <algorithm>

namespace dtrain::dist {

LocalSgdStrategy::LocalSgdStrategy(RingAllReduce& ring, std::unique_ptr<optim::Optimizer> optimizer,
                                   float clip_norm, int average_every, bool average_optimizer)
    : exchange_(ring),
      local_(std::move(optimizer), clip_norm),
      average_every_(average_every < 1 ? 1 : average_every),
      average_optimizer_(average_optimizer) {}

Status LocalSgdStrategy::Apply(std::int64_t step, std::span<float> params, std::span<float> grad,
                               float lr, const train::StepShare& share) {
  agreed_.reset();
  if (left_) return Status::Error("step " + std::to_string(step) + ": this replica left its ring");
  Status stepped = local_.Apply(step, params, grad, lr, share);
  if (!stepped.ok() || !AveragesAt(step + 1, average_every_)) return stepped;
  const auto op = static_cast<std::uint32_t>(step % RingAllReduce::kMaxOp);
  Status averaged = Average(params, op);
  if (!averaged.ok()) {
    return Status::Error("step " + std::to_string(step) + ": averaging the parameters: " +
                         averaged.message());
  }
  agreed_ = exchange_.agreed();
  return Status::Ok();
}

Status LocalSgdStrategy::Average(std::span<float> params, std::uint32_t op) {
  std::vector<std::span<float>> parts{params};
  if (average_optimizer_) {
    for (std::span<float> state : local_.LocalOptimizer()->StateVectors()) parts.push_back(state);
  }
  std::size_t floats = 0;
  for (std::span<float> part : parts) floats += part.size();
  std::span<float> payload = exchange_.Payload(floats);
  std::size_t at = 0;
  for (std::span<float> part : parts) {
    std::copy(part.begin(), part.end(), payload.begin() + static_cast<std::ptrdiff_t>(at));
    at += part.size();
  }
  Status averaged = exchange_.Mean(op);
  if (!averaged.ok()) return averaged;
  at = 0;
  for (std::span<float> part : parts) {
    std::copy_n(payload.begin() + static_cast<std::ptrdiff_t>(at), part.size(), part.begin());
    at += part.size();
  }
  return Status::Ok();
}

}  // namespace dtrain::dist
