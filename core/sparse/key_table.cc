#include "core/sparse/key_table.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace dtrain::sparse {
namespace {

using optim::OptimizerType;

// The value a state vector's coordinate starts at (FTRL's z is set from the weight instead).
float InitialState(const optim::OptimizerOptions& o) {
  return o.type == OptimizerType::kAdagrad ? o.initial_accumulator : 0.0f;
}

}  // namespace

Status CheckSparseOptimizer(const optim::OptimizerOptions& options) {
  switch (options.type) {
    case OptimizerType::kSgd:
    case OptimizerType::kAdagrad:
    case OptimizerType::kFtrl:
      return Status::Ok();
    case OptimizerType::kMomentum:
    case OptimizerType::kAdam:
    case OptimizerType::kLbfgs:
      break;
  }
  return Status::Error("optimizer " + std::string(optim::OptimizerTypeName(options.type)) +
                       " moves parameters whose gradient is 0, so every feature would cost a "
                       "step: sparse models train with sgd, adagrad or ftrl");
}

KeyTable::KeyTable(const SparseModel& model, const optim::OptimizerOptions& options,
                   std::uint64_t seed)
    : model_(model),
      options_(options),
      ftrl_{options.alpha, options.beta, options.l1, options.l2},
      seed_(seed),
      width_(model.SlotWidth()),
      globals_(model.GlobalWidth(), 0.0f),
      global0_(model.GlobalWidth(), InitialState(options)),
      global1_(model.GlobalWidth(), 0.0f) {}

std::size_t KeyTable::RowOf(std::uint32_t key) {
  const auto [it, made] = rows_.try_emplace(key, rows_.size());
  if (!made) return it->second;
  const std::size_t at = slots_.size();
  slots_.resize(at + width_);
  model_.InitSlot(seed_, key, slots_.data() + at);
  if (options_.type != OptimizerType::kSgd) {
    state0_.resize(at + width_, InitialState(options_));
    state1_.resize(at + width_, 0.0f);
    if (options_.type == OptimizerType::kFtrl) {
      for (std::size_t i = 0; i < width_; ++i) {
        state0_[at + i] = optim::FtrlStateOf(slots_[at + i], ftrl_);
      }
    }
  }
  return it->second;
}

void KeyTable::Pull(std::span<const std::uint32_t> keys, float* out) {
  for (const std::uint32_t key : keys) {
    const std::size_t row = RowOf(key);
    out = std::copy_n(slots_.data() + row * width_, width_, out);
  }
}

void KeyTable::Push(std::span<const std::uint32_t> keys, const float* grad_slots,
                    const float* grad_globals, float lr) {
  const bool stateful = options_.type != OptimizerType::kSgd;
  for (std::size_t k = 0; k < keys.size(); ++k) {
    const std::size_t at = RowOf(keys[k]) * width_;
    Step(slots_.data() + at, grad_slots + k * width_, stateful ? state0_.data() + at : nullptr,
         stateful ? state1_.data() + at : nullptr, width_, lr);
  }
  Step(globals_.data(), grad_globals, global0_.data(), global1_.data(), globals_.size(), lr);
}

void KeyTable::Step(float* p, const float* g, float* s0, float* s1, std::size_t n, float lr) const {
  switch (options_.type) {
    case OptimizerType::kSgd:
      for (std::size_t i = 0; i < n; ++i) p[i] -= lr * g[i];
      return;
    case OptimizerType::kAdagrad:
      for (std::size_t i = 0; i < n; ++i) {
        s0[i] += g[i] * g[i];
        p[i] -= lr * g[i] / (std::sqrt(s0[i]) + options_.eps);
      }
      return;
    case OptimizerType::kFtrl:
      for (std::size_t i = 0; i < n; ++i) p[i] = optim::FtrlStep(g[i], p[i], s0[i], s1[i], ftrl_);
      return;
    case OptimizerType::kMomentum:
    case OptimizerType::kAdam:
    case OptimizerType::kLbfgs:
      return;  // refused by CheckSparseOptimizer
  }
}

const float* KeyTable::Find(std::uint32_t key) const {
  const auto it = rows_.find(key);
  return it == rows_.end() ? nullptr : slots_.data() + it->second * width_;
}

std::size_t KeyTable::Bytes() const {
  return (slots_.size() + state0_.size() + state1_.size()) * sizeof(float) +
         rows_.size() * (sizeof(std::uint32_t) + sizeof(std::size_t) + 2 * sizeof(void*));
}

}  // namespace dtrain::sparse
