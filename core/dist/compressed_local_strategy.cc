#include "core/dist/compressed_local_strategy.h"

#include <algorithm>
#include <string>

namespace dtrain::dist {
namespace {

std::size_t StateFloats(optim::Optimizer& optimizer) {
  std::size_t floats = 0;
  for (std::span<float> v : optimizer.StateVectors()) floats += v.size();
  return floats;
}

}  // namespace

CompressedLocalStrategy::CompressedLocalStrategy(RingAllReduce& ring,
                                                 std::vector<compress::TensorPlan> plan,
                                                 const compress::Settings& settings,
                                                 std::uint64_t seed,
                                                 std::unique_ptr<optim::Optimizer> optimizer,
                                                 float clip_norm, AveragingOptions averaging)
    : exchange_(ring),
      compressor_(std::move(plan), settings, seed),
      local_(std::move(optimizer), clip_norm),
      averaging_(averaging) {
  averaging_.average_every = std::max(1, averaging_.average_every);
  const std::size_t state = averaging_.average_optimizer ? StateFloats(*LocalOptimizer()) : 0;
  ring_bytes_per_average_ = ring.BytesSent(compress::PlanFloats(compressor_.plan()) + state +
                                           VotingAllReduce::kVoteFloats);
}

Status CompressedLocalStrategy::Apply(std::int64_t step, std::span<float> params,
                                      std::span<float> grad, float lr,
                                      const train::StepShare& share) {
  agreed_.reset();
  checkpoint_agreed_ = false;
  // The first step's parameters are every replica's initialization (or the checkpoint's).
  if (anchor_.empty()) anchor_.assign(params.begin(), params.end());
  Status stepped = local_.Apply(step, params, grad, lr, share);
  if (!stepped.ok() || (step + 1) % averaging_.average_every != 0) return stepped;
  if (Status averaged = Average(step, params); !averaged.ok()) {
    return Status::Error("step " + std::to_string(step) +
                         ": averaging the parameters: " + averaged.message());
  }
  agreed_ = exchange_.votes().agreed();
  checkpoint_agreed_ = exchange_.votes().checkpoint_agreed();
  return Status::Ok();
}

Status CompressedLocalStrategy::Average(std::int64_t step, std::span<float> params) {
  change_.resize(params.size());
  for (std::size_t i = 0; i < params.size(); ++i) change_[i] = params[i] - anchor_[i];
  exchange_.BeginExchange();
  if (Status s = compressor_.Exchange(step, change_, exchange_); !s.ok()) return s;
  for (std::size_t i = 0; i < params.size(); ++i) params[i] = anchor_[i] + change_[i];
  std::ranges::copy(params, anchor_.begin());
  raw_ring_bytes_ += ring_bytes_per_average_;
  return averaging_.average_optimizer ? AverageOptimizer() : Status::Ok();
}

Status CompressedLocalStrategy::AverageOptimizer() {
  const std::vector<std::span<float>> parts = LocalOptimizer()->StateVectors();
  state_.clear();
  for (std::span<float> part : parts) state_.insert(state_.end(), part.begin(), part.end());
  if (state_.empty()) return Status::Ok();
  if (Status s = exchange_.MeanWithoutVotes(state_); !s.ok()) return s;
  std::size_t at = 0;
  for (std::span<float> part : parts) {
    std::copy_n(state_.begin() + static_cast<std::ptrdiff_t>(at), part.size(), part.begin());
    at += part.size();
  }
  return Status::Ok();
}

train::CommStats CompressedLocalStrategy::Stats() const {
  return exchange_.Stats(compressor_, raw_ring_bytes_);
}

Result<std::vector<std::vector<float>>> CompressedLocalStrategy::CheckpointState() {
  const std::span<const float> anchor(anchor_);
  return exchange_.GatherState(compressor_, {&anchor, 1});
}

Status CompressedLocalStrategy::RestoreState(std::span<const std::span<const float>> state) {
  Result<std::vector<std::span<const float>>> shared =
      exchange_.RestoreState(state, compressor_, 1);
  if (!shared.ok()) return shared.status();
  const std::span<const float> anchor = shared.value().front();
  const std::size_t floats = compress::PlanFloats(compressor_.plan());
  if (!anchor.empty() && anchor.size() != floats) {
    return Status::Error("the checkpoint's last average holds " + std::to_string(anchor.size()) +
                         " parameters, not " + std::to_string(floats));
  }
  anchor_.assign(anchor.begin(), anchor.end());
  return Status::Ok();
}

}  // namespace dtrain::dist
