#include "core/model/model.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "core/data/random.h"
#include "core/math/elementwise.h"
#include "core/math/gemm.h"

namespace dtrain::model {
namespace {

using math::Trans;

std::size_t Rows(int rows, int cols) {
  return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
}

}  // namespace

Workspace::Workspace(const Model& model, int capacity) : capacity_(capacity) {
  for (const LayerView& layer : model.layers()) {
    activations_.emplace_back(Rows(capacity, layer.out));
  }
  delta_a_.resize(Rows(capacity, model.MaxWidth()));
  delta_b_.resize(Rows(capacity, model.MaxWidth()));
}

Model::Model(ModelSpec spec) : spec_(std::move(spec)) {
  assert(ValidateModelSpec(spec_).ok());
  std::vector<int> widths{spec_.inputs};
  widths.insert(widths.end(), spec_.hidden.begin(), spec_.hidden.end());
  widths.push_back(spec_.outputs);
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    LayerView layer;
    layer.in = widths[l];
    layer.out = widths[l + 1];
    layer.weight_offset = num_params_;
    layer.bias_offset = num_params_ + Rows(layer.in, layer.out);
    const bool last = l + 2 == widths.size();
    layer.activation = last ? math::Activation::kIdentity : spec_.activation;
    num_params_ = layer.bias_offset + static_cast<std::size_t>(layer.out);
    layers_.push_back(layer);
  }
}

int Model::MaxWidth() const {
  int width = spec_.inputs;
  for (const LayerView& layer : layers_) width = std::max(width, layer.out);
  return width;
}

void Model::Init(std::span<float> params, std::uint64_t seed) const {
  assert(params.size() == num_params_);
  std::fill(params.begin(), params.end(), 0.0f);
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const LayerView& layer = layers_[l];
    float* w = params.data() + layer.weight_offset;
    const std::size_t count = Rows(layer.in, layer.out);
    for (std::size_t i = 0; i < count; ++i) w[i] = InitialWeight(spec_, layer, l, i, seed);
  }
}

float InitialWeight(const ModelSpec& spec, const LayerView& layer, std::size_t layer_index,
                    std::size_t index, std::uint64_t seed) {
  InitScheme scheme = spec.init;
  if (scheme == InitScheme::kAuto) {
    scheme = layer.activation == math::Activation::kRelu ? InitScheme::kHe : InitScheme::kXavier;
  }
  data::SplitMix64 rng(data::MixSeed(data::MixSeed(seed, layer_index), index));
  if (scheme == InitScheme::kHe) {
    return static_cast<float>(rng.Normal() * std::sqrt(2.0 / static_cast<double>(layer.in)));
  }
  const double limit = std::sqrt(6.0 / static_cast<double>(layer.in + layer.out));
  return static_cast<float>((2.0 * rng.Uniform() - 1.0) * limit);
}

const float* Model::Forward(const float* params, const float* x, int rows, Workspace& ws) const {
  assert(rows <= ws.capacity());
  const float* input = x;
  for (std::size_t l = 0; l < layers_.size(); ++l) {
    const LayerView& layer = layers_[l];
    float* out = ws.activations_[l].data();
    math::Gemm(Trans::kNo, Trans::kNo, rows, layer.out, layer.in, 1.0f, input, layer.in,
               params + layer.weight_offset, layer.out, 0.0f, out, layer.out);
    math::AddBiasActivate(out, rows, layer.out, params + layer.bias_offset, layer.activation);
    input = out;
  }
  return input;
}

LossValue Model::Evaluate(const float* params, const float* x, const float* y, int rows,
                          Workspace& ws) const {
  const float* out = Forward(params, x, rows, ws);
  return ComputeLoss(spec_.loss, out, y, rows, spec_.outputs, nullptr);
}

LossValue Model::ForwardBackward(const float* params, const float* x, const float* y, int rows,
                                 float weight_decay, float* grad, Workspace& ws) const {
  const float* out = Forward(params, x, rows, ws);
  float* delta = ws.delta_a_.data();
  float* next_delta = ws.delta_b_.data();
  const LossValue value = ComputeLoss(spec_.loss, out, y, rows, spec_.outputs, delta);

  for (std::size_t l = layers_.size(); l-- > 0;) {
    const LayerView& layer = layers_[l];
    const float* input = l == 0 ? x : ws.activations_[l - 1].data();
    // dW = input^T * delta; db = column sums of delta.
    math::Gemm(Trans::kYes, Trans::kNo, layer.in, layer.out, rows, 1.0f, input, layer.in, delta,
               layer.out, 0.0f, grad + layer.weight_offset, layer.out);
    math::ColumnSums(delta, rows, layer.out, 0.0f, grad + layer.bias_offset);
    if (weight_decay != 0.0f) {
      const std::size_t count = Rows(layer.in, layer.out);
      math::Axpy(weight_decay, {params + layer.weight_offset, count},
                 {grad + layer.weight_offset, count});
    }
    if (l == 0) break;
    // delta of the previous layer's output: delta * W^T, through its activation.
    math::Gemm(Trans::kNo, Trans::kYes, rows, layer.in, layer.out, 1.0f, delta, layer.out,
               params + layer.weight_offset, layer.out, 0.0f, next_delta, layer.in);
    math::ActivationBackward(input, next_delta, Rows(rows, layer.in), layers_[l - 1].activation);
    std::swap(delta, next_delta);
  }
  return value;
}

double Model::WeightDecayPenalty(const float* params, float weight_decay) const {
  if (weight_decay == 0.0f) return 0.0;
  double sum = 0.0;
  for (const LayerView& layer : layers_) {
    sum += math::SquaredNorm({params + layer.weight_offset, Rows(layer.in, layer.out)});
  }
  return 0.5 * weight_decay * sum;
}

}  // namespace dtrain::model
