#include "core/optim/optimizer.h"

#include <algorithm>
#include <array>
#include <cassert>
#include <cmath>
#include <string>

#include "core/math/buffer.h"
#include "core/math/part_range.h"
#include "core/math/thread_team.h"
#include "core/math/vector_width.h"
#include "core/name_table.h"
#include "core/optim/ftrl.h"

namespace dtrain::optim {
namespace {

constexpr NameTable<OptimizerType, 6> kOptimizerTypes{{{{OptimizerType::kSgd, "sgd"},
                                                        {OptimizerType::kMomentum, "momentum"},
                                                        {OptimizerType::kAdagrad, "adagrad"},
                                                        {OptimizerType::kAdam, "adam"},
                                                        {OptimizerType::kLbfgs, "lbfgs"},
                                                        {OptimizerType::kFtrl, "ftrl"}}},
                                                      "sgd, momentum, adagrad, adam, lbfgs, ftrl"};

// The passes below are plain loops over elements, each element's update one fixed sequence of
// IEEE float operations: exact sqrt and division, and this file is compiled without fused
// multiply-adds and without errno (core/CMakeLists.txt; without errno GCC vectorises sqrt). So
// the vector body, its scalar tail and every build below compute the same bits for an element
// wherever a range starts or ends: shards compute bit for bit what one optimizer over their union
// computes, on any CPU. (Not Eigen: its packet sqrt is an approximation, its scalar sqrt exact.)
// Each pass runs at the CPU's vector width (vector_width.h): 16 or 8 floats at a time on CPUs with
// AVX-512 or AVX2, in the shipped binary too.

DTRAIN_AT_VECTOR_WIDTH
void SgdPass(std::size_t n, float lr, float* p, const float* g) {
  for (std::size_t i = 0; i < n; ++i) p[i] -= lr * g[i];
}

DTRAIN_AT_VECTOR_WIDTH
void MomentumPass(std::size_t n, float lr, float mu, float* p, float* velocity, const float* g) {
  for (std::size_t i = 0; i < n; ++i) {
    const float v = mu * velocity[i] + g[i];
    velocity[i] = v;
    p[i] -= lr * v;
  }
}

DTRAIN_AT_VECTOR_WIDTH
void NesterovPass(std::size_t n, float lr, float mu, float* p, float* velocity, const float* g) {
  for (std::size_t i = 0; i < n; ++i) {
    const float v = mu * velocity[i] + g[i];
    velocity[i] = v;
    p[i] -= lr * (g[i] + mu * v);
  }
}

// The square roots below never see a negative: the accumulators only add squares (and start at
// a validated initial_accumulator >= 0), so leaving errno out changes no result.
DTRAIN_AT_VECTOR_WIDTH
void AdagradPass(std::size_t n, float lr, float eps, float* p, float* accumulator, const float* g) {
  for (std::size_t i = 0; i < n; ++i) {
    const float acc = accumulator[i] + g[i] * g[i];
    accumulator[i] = acc;
    p[i] -= lr * g[i] / (std::sqrt(acc) + eps);
  }
}

// Adam's constants for one step: the moments' decay rates, and the bias corrections folded into
// a step size and a factor on sqrt(v).
struct AdamCoefficients {
  float b1, one_minus_b1, b2, one_minus_b2, step_size, inv_sqrt_bc2, eps;
};

DTRAIN_AT_VECTOR_WIDTH
void AdamPass(std::size_t n, AdamCoefficients c, float* p, float* m, float* v, const float* g) {
  for (std::size_t i = 0; i < n; ++i) {
    const float m_i = c.b1 * m[i] + c.one_minus_b1 * g[i];
    const float v_i = c.b2 * v[i] + c.one_minus_b2 * (g[i] * g[i]);
    m[i] = m_i;
    v[i] = v_i;
    p[i] -= c.step_size * m_i / (std::sqrt(v_i) * c.inv_sqrt_bc2 + c.eps);
  }
}

class Sgd final : public Optimizer {
 public:
  Sgd(std::size_t begin, std::size_t end) : Optimizer(OptimizerType::kSgd, begin, end) {}

 private:
  void Update(std::size_t, std::span<float> params, std::span<const float> grad,
              float lr) override {
    SgdPass(params.size(), lr, params.data(), grad.data());
  }
};

class Momentum final : public Optimizer {
 public:
  Momentum(const OptimizerOptions& options, std::size_t begin, std::size_t end)
      : Optimizer(OptimizerType::kMomentum, begin, end),
        momentum_(options.momentum),
        nesterov_(options.nesterov) {}

 private:
  void Update(std::size_t offset, std::span<float> params, std::span<const float> grad,
              float lr) override {
    const auto pass = nesterov_ ? NesterovPass : MomentumPass;
    pass(params.size(), lr, momentum_, params.data(), State(0) + offset, grad.data());
  }

  float momentum_;
  bool nesterov_;
};

class Adagrad final : public Optimizer {
 public:
  Adagrad(const OptimizerOptions& options, std::size_t begin, std::size_t end)
      : Optimizer(OptimizerType::kAdagrad, begin, end, options.initial_accumulator),
        eps_(options.eps) {}

 private:
  void Update(std::size_t offset, std::span<float> params, std::span<const float> grad,
              float lr) override {
    AdagradPass(params.size(), lr, eps_, params.data(), State(0) + offset, grad.data());
  }

  float eps_;
};

class Adam final : public Optimizer {
 public:
  Adam(const OptimizerOptions& options, std::size_t begin, std::size_t end)
      : Optimizer(OptimizerType::kAdam, begin, end),
        beta1_(options.beta1),
        beta2_(options.beta2),
        eps_(options.eps) {}

 private:
  void Update(std::size_t offset, std::span<float> params, std::span<const float> grad,
              float lr) override {
    const double t = static_cast<double>(steps() + 1);
    const auto step_size = static_cast<float>(lr / (1.0 - std::pow(double{beta1_}, t)));
    const auto inv_sqrt_bc2 =
        static_cast<float>(1.0 / std::sqrt(1.0 - std::pow(double{beta2_}, t)));
    const AdamCoefficients c{.b1 = beta1_,
                             .one_minus_b1 = 1.0f - beta1_,
                             .b2 = beta2_,
                             .one_minus_b2 = 1.0f - beta2_,
                             .step_size = step_size,
                             .inv_sqrt_bc2 = inv_sqrt_bc2,
                             .eps = eps_};
    AdamPass(params.size(), c, params.data(), State(0) + offset, State(1) + offset, grad.data());
  }

  float beta1_;
  float beta2_;
  float eps_;
};

// Scalar per coordinate (ftrl.h): every element gets the same arithmetic wherever a range starts.
class Ftrl final : public Optimizer {
 public:
  Ftrl(const OptimizerOptions& options, std::size_t begin, std::size_t end)
      : Optimizer(OptimizerType::kFtrl, begin, end),
        rates_{options.alpha, options.beta, options.l1, options.l2} {}

 private:
  void Update(std::size_t offset, std::span<float> params, std::span<const float> grad,
              float) override {
    float* z = State(0) + offset;
    float* n = State(1) + offset;
    if (steps() == 0) {
      for (std::size_t i = 0; i < params.size(); ++i) z[i] = FtrlStateOf(params[i], rates_);
    }
    for (std::size_t i = 0; i < params.size(); ++i) {
      params[i] = FtrlStep(grad[i], params[i], z[i], n[i], rates_);
    }
  }

  FtrlRates rates_;
};

// NaN fails every comparison, so each check also rejects NaN.
bool InUnitInterval(float x) { return x >= 0.0f && x < 1.0f; }  // [0, 1)

}  // namespace

Optimizer::Optimizer(OptimizerType type, std::size_t begin, std::size_t end, float initial_state)
    : type_(type),
      begin_(begin),
      end_(end),
      own_state_(static_cast<std::size_t>(StateVectorCount(type)) * (end - begin), initial_state),
      state_(own_state_) {
  assert(begin <= end && "optimizer range [begin, end) is reversed");
}

std::vector<std::span<float>> Optimizer::StateVectors() {
  std::vector<std::span<float>> vectors;
  for (int k = 0; k < StateVectorCount(type_); ++k) {
    vectors.push_back(state_.subspan(static_cast<std::size_t>(k) * size(), size()));
  }
  return vectors;
}

void Optimizer::MoveStateTo(std::span<float> storage) {
  assert(storage.size() == state_.size() && "MoveStateTo takes room for every state vector");
  if (storage.data() == state_.data()) return;  // already there
  std::copy(state_.begin(), state_.end(), storage.begin());
  state_ = storage;
  own_state_ = math::FloatBuffer();
}

void Optimizer::Step(std::span<float> params, std::span<const float> grad, float lr) {
  assert(params.size() == size() && grad.size() == size() &&
         "Step takes exactly the optimizer's range of params and grad");
  // Below this many floats a second thread costs more than its half of the pass saves.
  constexpr std::size_t kSharedPassFloats = std::size_t{1} << 15;
  constexpr std::size_t kPartAlignment = 16;  // parts start on a 64-byte multiple of the range
  if (team_ == nullptr || team_->size() == 1 || size() < kSharedPassFloats) {
    Update(0, params, grad, lr);
  } else {
    const std::size_t units = (size() + kPartAlignment - 1) / kPartAlignment;
    team_->Run([&](int part) {
      const math::PartRange r = math::PartOf(units, team_->size(), part);
      const std::size_t begin = std::min(size(), r.begin * kPartAlignment);
      const std::size_t end = std::min(size(), r.end * kPartAlignment);
      Update(begin, params.subspan(begin, end - begin), grad.subspan(begin, end - begin), lr);
    });
  }
  ++steps_;
}

void Optimizer::StepFromBlocks(std::span<float> params, const GradientBlock& block, float lr) {
  assert(params.size() == size() && "StepFromBlocks takes exactly the optimizer's range of params");
  StepPartFromBlocks(0, params, block, lr);
  ++steps_;
}

void Optimizer::StepPartFromBlocks(std::size_t offset, std::span<float> params,
                                   const GradientBlock& block, float lr) {
  assert(offset + params.size() <= size() && "StepPartFromBlocks takes a run of the range");
  std::array<float, kGradientBlock> grad;
  for (std::size_t at = 0; at < params.size(); at += kGradientBlock) {
    const std::size_t n = std::min(kGradientBlock, params.size() - at);
    const std::span<float> piece(grad.data(), n);
    block(offset + at, piece);
    Update(offset + at, params.subspan(at, n), piece, lr);
  }
}

int StateVectorCount(OptimizerType type) {
  switch (type) {
    case OptimizerType::kSgd:
      return 0;
    case OptimizerType::kMomentum:
      return 1;
    case OptimizerType::kAdagrad:
      return 1;
    case OptimizerType::kAdam:
      return 2;
    case OptimizerType::kLbfgs:
      return 0;
    case OptimizerType::kFtrl:
      return 2;
  }
  return 2;
}

Status ValidateOptimizerOptions(const OptimizerOptions& options) {
  switch (options.type) {
    case OptimizerType::kSgd:
      break;
    case OptimizerType::kMomentum:
      if (!InUnitInterval(options.momentum)) {
        return Status::Error("optimizer momentum: momentum must be in [0, 1), got " +
                             std::to_string(options.momentum));
      }
      if (options.nesterov && options.momentum == 0.0f) {
        return Status::Error("optimizer momentum: nesterov needs momentum > 0");
      }
      break;
    case OptimizerType::kAdagrad:
      if (!(options.initial_accumulator >= 0.0f)) {
        return Status::Error("optimizer adagrad: initial_accumulator must be >= 0, got " +
                             std::to_string(options.initial_accumulator));
      }
      break;
    case OptimizerType::kAdam:
      if (!InUnitInterval(options.beta1) || !InUnitInterval(options.beta2)) {
        return Status::Error("optimizer adam: beta1 and beta2 must be in [0, 1), got " +
                             std::to_string(options.beta1) + " and " +
                             std::to_string(options.beta2));
      }
      break;
    case OptimizerType::kLbfgs:
      break;
    case OptimizerType::kFtrl:
      if (!(options.alpha > 0.0f) || !(options.beta > 0.0f)) {
        return Status::Error("optimizer ftrl: alpha and beta must be > 0, got " +
                             std::to_string(options.alpha) + " and " +
                             std::to_string(options.beta));
      }
      if (!(options.l1 >= 0.0f) || !(options.l2 >= 0.0f)) {
        return Status::Error("optimizer ftrl: l1 and l2 must be >= 0, got " +
                             std::to_string(options.l1) + " and " + std::to_string(options.l2));
      }
      break;
  }
  if ((options.type == OptimizerType::kAdagrad || options.type == OptimizerType::kAdam) &&
      !(options.eps > 0.0f)) {
    return Status::Error("optimizer " + std::string(OptimizerTypeName(options.type)) +
                         ": eps must be > 0, got " + std::to_string(options.eps));
  }
  return Status::Ok();
}

std::unique_ptr<Optimizer> MakeOptimizer(const OptimizerOptions& options, std::size_t begin,
                                         std::size_t end) {
  switch (options.type) {
    case OptimizerType::kSgd:
      return std::make_unique<Sgd>(begin, end);
    case OptimizerType::kMomentum:
      return std::make_unique<Momentum>(options, begin, end);
    case OptimizerType::kAdagrad:
      return std::make_unique<Adagrad>(options, begin, end);
    case OptimizerType::kAdam:
      return std::make_unique<Adam>(options, begin, end);
    case OptimizerType::kFtrl:
      return std::make_unique<Ftrl>(options, begin, end);
    case OptimizerType::kLbfgs:
      break;
  }
  assert(false && "L-BFGS is not a step optimizer");
  return nullptr;
}

std::string_view OptimizerTypeName(OptimizerType type) { return kOptimizerTypes.Name(type); }
Result<OptimizerType> ParseOptimizerType(std::string_view name) {
  return kOptimizerTypes.Parse(name, "optimizer");
}
std::string_view OptimizerTypeChoices() { return kOptimizerTypes.choices; }

}  // namespace dtrain::optim
