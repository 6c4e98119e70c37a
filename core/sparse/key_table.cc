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
  const auto [row, made] = rows_.Insert(key);
  if (!made) return row;
  keys_.push_back(key);
  const std::size_t at = slots_.size();
  slots_.resize(at + width_);
  model_.InitSlot(seed_, key, slots_.data() + at);
  if (options_.type != OptimizerType::kSgd) {
    state0_.resize(at + width_, InitialState(options_));
    if (options_.type == OptimizerType::kFtrl) {
      state1_.resize(at + width_, 0.0f);
      for (std::size_t i = 0; i < width_; ++i) {
        state0_[at + i] = optim::FtrlStateOf(slots_[at + i], ftrl_);
      }
    }
  }
  return row;
}

void KeyTable::Pull(std::span<const std::uint32_t> keys, float* out) {
  for (const std::uint32_t key : keys) {
    const std::size_t row = RowOf(key);
    out = std::copy_n(slots_.data() + row * width_, width_, out);
  }
}

void KeyTable::Push(std::span<const std::uint32_t> keys, const float* grad_slots,
                    const float* grad_globals, float lr) {
  const std::size_t vectors = StateVectors();
  for (std::size_t k = 0; k < keys.size(); ++k) {
    const std::size_t at = RowOf(keys[k]) * width_;
    Step(slots_.data() + at, grad_slots + k * width_, vectors > 0 ? state0_.data() + at : nullptr,
         vectors > 1 ? state1_.data() + at : nullptr, width_, lr);
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
  const std::optional<std::uint32_t> row = rows_.Find(key);
  return row ? slots_.data() + static_cast<std::size_t>(*row) * width_ : nullptr;
}

std::size_t KeyTable::Bytes() const {
  return (slots_.size() + state0_.size() + state1_.size()) * sizeof(float) + rows_.Bytes() +
         keys_.capacity() * sizeof(std::uint32_t);
}

std::size_t KeyTable::StateVectors() const {
  switch (options_.type) {
    case OptimizerType::kAdagrad:
      return 1;
    case OptimizerType::kFtrl:
      return 2;
    default:
      return 0;
  }
}

KeyTableState KeyTable::Snapshot() const {
  KeyTableState out{keys_, slots_, {}, globals_};
  const std::vector<float>* rows[] = {&state0_, &state1_};
  const std::vector<float>* globals[] = {&global0_, &global1_};
  for (std::size_t v = 0; v < StateVectors(); ++v) {
    std::vector<float>& joined = out.state.emplace_back(*rows[v]);
    joined.insert(joined.end(), globals[v]->begin(), globals[v]->end());
  }
  return out;
}

Status KeyTable::Restore(KeyTableState state) {
  const std::size_t keys = state.keys.size();
  const std::size_t globals = globals_.size();
  if (state.slots.size() != keys * width_ || state.globals.size() != globals ||
      state.state.size() != StateVectors()) {
    return Status::Error("sparse model state of " + std::to_string(keys) + " keys does not fit " +
                         "this model and optimizer (slot width " + std::to_string(width_) + ", " +
                         std::to_string(StateVectors()) + " state vectors)");
  }
  for (const std::vector<float>& v : state.state) {
    if (v.size() != keys * width_ + globals) {
      return Status::Error("sparse optimizer state of " + std::to_string(v.size()) +
                           " floats, expected " + std::to_string(keys * width_ + globals));
    }
  }
  KeyIndex rows;
  for (std::size_t r = 0; r < keys; ++r) {
    if (!rows.Insert(state.keys[r]).second) {
      return Status::Error("sparse model state repeats key " + std::to_string(state.keys[r]));
    }
  }
  rows_ = std::move(rows);
  keys_ = std::move(state.keys);
  slots_ = std::move(state.slots);
  globals_ = std::move(state.globals);
  std::vector<float>* row_state[] = {&state0_, &state1_};
  std::vector<float>* global_state[] = {&global0_, &global1_};
  for (std::size_t v = 0; v < 2; ++v) {
    row_state[v]->clear();
    if (v >= StateVectors()) continue;
    std::vector<float>& joined = state.state[v];
    global_state[v]->assign(joined.end() - static_cast<std::ptrdiff_t>(globals), joined.end());
    joined.resize(keys * width_);
    *row_state[v] = std::move(joined);
  }
  return Status::Ok();
}

}  // namespace dtrain::sparse
