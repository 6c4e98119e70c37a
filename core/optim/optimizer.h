// Optimizers over a contiguous range [begin, end) of the flat parameter vector.
//
//   auto opt = MakeOptimizer({.type = OptimizerType::kAdam}, shard.begin, shard.end);
//   opt->Step(params.subspan(opt->begin(), opt->size()), grad.subspan(...), lr);
//
// Every state vector has the layout of the range it serves (element i belongs to parameter
// begin() + i), so a parameter-server shard owns a range, a checkpoint stores StateVectors() and
// steps(), and optimizers on [0, k) and [k, n) together compute bit for bit what one optimizer on
// [0, n) computes. Step is one fused pass over the range and allocates nothing. StepFromBlocks
// takes the same step from a gradient that the caller produces a block at a time (e.g. the mean
// of several workers' gradients, each block computed just before it is used, in cache) and
// computes the same bits as Step given the whole gradient.
//
// The update rules (PyTorch conventions; g = grad, p = params, all elementwise, t = the 1-based
// number of the step being taken, i.e. steps() + 1):
//   kSgd       p -= lr * g
//   kMomentum  v = momentum * v + g;  p -= lr * v                    (v starts at 0)
//              nesterov:              p -= lr * (g + momentum * v)   (with the updated v)
//   kAdagrad   acc += g * g;  p -= lr * g / (sqrt(acc) + eps)        (acc starts at
//                                                                      initial_accumulator)
//   kAdam      m = beta1 * m + (1 - beta1) * g;  v = beta2 * v + (1 - beta2) * g * g
//              p -= a * m / (sqrt(v) * b + eps)
//              with a = lr / (1 - beta1^t) and b = 1 / sqrt(1 - beta2^t), the bias corrections,
//              computed in double once per step and rounded to float (m, v start at 0); this is
//              PyTorch's Adam without weight decay or amsgrad
//   kFtrl      FTRL-Proximal per coordinate (ftrl.h), state z and n, step scale alpha (lr is
//              not used); z starts at FtrlStateOf(the initial parameter) on the first step
//
// An Optimizer is used by one thread at a time; distinct optimizers are independent.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "core/math/buffer.h"
#include "core/status.h"

namespace dtrain::math {
class ThreadTeam;
}  // namespace dtrain::math

namespace dtrain::optim {

// kLbfgs is not a step optimizer: a job of that type runs L-BFGS (core/optim/lbfgs.h, its options
// in config::JobConfig) on its full-batch objective instead of a training loop, and no Optimizer
// of that type is ever made.
enum class OptimizerType { kSgd, kMomentum, kAdagrad, kAdam, kLbfgs, kFtrl };

struct OptimizerOptions {
  OptimizerType type = OptimizerType::kSgd;
  float momentum = 0.9f;               // kMomentum, in [0, 1)
  bool nesterov = false;               // kMomentum; needs momentum > 0
  float beta1 = 0.9f, beta2 = 0.999f;  // kAdam, each in [0, 1)
  float eps = 1e-8f;                   // kAdam and kAdagrad, > 0
  float initial_accumulator = 0.1f;    // kAdagrad, >= 0
  float alpha = 0.1f, beta = 1.0f;     // kFtrl, each > 0
  float l1 = 0.0f, l2 = 0.0f;          // kFtrl, each >= 0
};

// OK when every field used by options.type is in its documented range; otherwise names the field.
Status ValidateOptimizerOptions(const OptimizerOptions& options);

// How many state vectors (each as long as the parameters) an optimizer of `type` keeps: the
// size of Optimizer::StateVectors(); 0 for kLbfgs, whose vectors LbfgsVectorCount counts.
int StateVectorCount(OptimizerType type);

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  Optimizer(const Optimizer&) = delete;
  Optimizer& operator=(const Optimizer&) = delete;

  // Applies one update. params and grad are exactly the range [begin(), end()) of the flat
  // vectors (size() floats each, asserted) and may sit at any alignment. Increments steps().
  void Step(std::span<float> params, std::span<const float> grad, float lr);
  // Step, with the gradient written block by block into `out` by block(offset, out): the floats
  // [offset, offset + out.size()) of the range, kGradientBlock of them (fewer in the last block),
  // in order.
  static constexpr std::size_t kGradientBlock = 2048;
  using GradientBlock = std::function<void(std::size_t offset, std::span<float> out)>;
  void StepFromBlocks(std::span<float> params, const GradientBlock& block, float lr);
  // Threads Step shares its pass with, in contiguous parts, when the range is large enough to
  // pay (null: the calling thread alone). The bits are the same either way: every rule is
  // elementwise. The team must outlive its use here and be free whenever Step is called.
  void set_team(math::ThreadTeam* team) { team_ = team; }
  // Step taken in parts, by a caller that produces the gradient a run at a time, on one thread
  // or several (e.g. each thread stepping the parameters whose gradient it has just computed,
  // still in its cache): StepPart on runs of the range that cover it once, at any time and from
  // any threads as long as the runs are disjoint, then EndPartedStep once, after the last. The
  // same bits as Step: offset is the run's first float within the range, params and grad its
  // floats.
  void StepPart(std::size_t offset, std::span<float> params, std::span<const float> grad,
                float lr) {
    Update(offset, params, grad, lr);
  }
  // StepPart over the run [offset, offset + params.size()) of the range, its gradient written block
  // by block as StepFromBlocks writes it (block's offset counted from the range's first float).
  void StepPartFromBlocks(std::size_t offset, std::span<float> params, const GradientBlock& block,
                          float lr);
  void EndPartedStep() { ++steps_; }

  OptimizerType type() const { return type_; }
  std::size_t begin() const { return begin_; }
  std::size_t end() const { return end_; }
  std::size_t size() const { return end_ - begin_; }

  // The checkpointable state, size() floats each, in this order: kSgd none; kMomentum velocity;
  // kAdagrad accumulator; kAdam m, v; kFtrl z, n. Writing through the spans restores a checkpoint;
  // together with set_steps() the optimizer then continues bit for bit as the one that was saved.
  std::vector<std::span<float>> StateVectors();
  // Copies the state vectors, one after another, into `storage` (StateVectorCount(type()) *
  // size() floats, asserted) and keeps them there from now on, e.g. in memory that replicas
  // share, each stepping its own runs of the range with StepPart. `storage` must outlive the
  // optimizer's use of it.
  void MoveStateTo(std::span<float> storage);

  // Number of Step calls taken (or restored); Adam's bias correction depends on it.
  std::uint64_t steps() const { return steps_; }
  void set_steps(std::uint64_t steps) { steps_ = steps; }

 protected:
  // The state vectors start at `initial_state` (Adagrad's initial accumulator; 0 for the rest).
  Optimizer(OptimizerType type, std::size_t begin, std::size_t end, float initial_state = 0.0f);
  // State vector k, size() floats.
  float* State(int k) { return state_.data() + static_cast<std::size_t>(k) * size(); }

 private:
  // The type's update rule over the floats [offset, offset + params.size()) of the range (params
  // and grad are those floats); steps() still counts the steps before this one.
  virtual void Update(std::size_t offset, std::span<float> params, std::span<const float> grad,
                      float lr) = 0;

  OptimizerType type_;
  std::size_t begin_;
  std::size_t end_;
  std::uint64_t steps_ = 0;
  math::ThreadTeam* team_ = nullptr;
  math::FloatBuffer own_state_;  // the state, until MoveStateTo moves it elsewhere
  std::span<float> state_;       // every state vector, one after another
};

// An optimizer of options.type for [begin, end); begin <= end and a type other than kLbfgs
// (asserted). Options are expected to have passed ValidateOptimizerOptions.
std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerOptions& options, std::size_t begin,
                                         std::size_t end);

// Configuration names: "sgd", "momentum", "adagrad", "adam", "lbfgs", "ftrl".
std::string_view OptimizerTypeName(OptimizerType type);
Result<OptimizerType> ParseOptimizerType(std::string_view name);  // error lists the choices
std::string_view OptimizerTypeChoices();  // "sgd, momentum, adagrad, adam, lbfgs, ftrl"

}  // namespace dtrain::optim
