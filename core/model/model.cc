#include "core/model/model.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "core/data/random.h"
#include "core/math/elementwise.h"

namespace dtrain::model {
namespace {

std::size_t Floats(int rows, std::size_t width) { return static_cast<std::size_t>(rows) * width; }

}  // namespace

Workspace::Workspace(const Model& model, int capacity, bool row_split) : capacity_(capacity) {
  std::size_t scratch = 0;
  for (std::size_t i = 0; i < model.NumLayers(); ++i) {
    activations_.emplace_back(Floats(capacity, model.layer(i).output().Size()));
    if (row_split) deltas_.emplace_back(Floats(capacity, model.layer(i).output().Size()));
    states_.emplace_back(model.layer(i).StateFloats());
    scratch = std::max(scratch, model.layer(i).ScratchFloats(capacity));
  }
  delta_a_.resize(Floats(capacity, model.MaxWidth()));
  delta_b_.resize(Floats(capacity, model.MaxWidth()));
  scratch_.resize(scratch);
}

Model::Model(ModelSpec spec) : spec_(std::move(spec)) {
  assert(ValidateModelSpec(spec_).ok());
  Shape shape = ModelInputShape(spec_);
  for (const LayerSpec& layer_spec : ModelLayers(spec_)) {
    Result<std::unique_ptr<Layer>> made = MakeLayer(layer_spec, shape, spec_.outputs);
    assert(made.ok());
    const Layer& layer = *made.value();
    shape = layer.output();
    offsets_.push_back(num_params_);
    if (layer.NumWeights() > 0) weights_.push_back({num_params_, layer.NumWeights()});
    if (const ParamRange stats = layer.RunningStatistics(); stats.count > 0) {
      statistics_.push_back({num_params_ + stats.offset, stats.count});
    }
    if (spec_.type != ModelType::kSequential) {
      layers_.push_back({.in = layer.FanIn(),
                         .out = layer.FanOut(),
                         .weight_offset = num_params_,
                         .bias_offset = num_params_ + layer.NumWeights(),
                         .activation = layer.OutputActivation()});
    }
    num_params_ += layer.NumParams();
    chain_.push_back(std::move(made).value());
  }
}

std::vector<ParamTensor> Model::Tensors() const {
  std::vector<ParamTensor> tensors;
  const std::vector<LayerSpec> specs = ModelLayers(spec_);
  for (std::size_t i = 0; i < chain_.size(); ++i) {
    const Layer& layer = *chain_[i];
    const std::string name =
        "layer " + std::to_string(i + 1) + " (" + LayerTypeName(specs[i]) + ") ";
    const std::size_t weights = layer.NumWeights();
    if (weights > 0) {
      const auto rows = static_cast<std::size_t>(std::max(1, layer.FanIn()));
      tensors.push_back({offsets_[i], rows, weights / rows, name + "weights"});
    }
    if (const std::size_t rest = layer.NumParams() - weights; rest > 0) {
      tensors.push_back({offsets_[i] + weights, 1, rest, name + (weights > 0 ? "biases" : "parameters")});
    }
  }
  return tensors;
}

std::size_t Model::MaxWidth() const {
  std::size_t width = ModelInputShape(spec_).Size();
  for (const auto& layer : chain_) width = std::max(width, layer->output().Size());
  return width;
}

math::Activation Model::FollowingActivation(std::size_t i) const {
  if (chain_[i]->OutputActivation() != math::Activation::kIdentity) {
    return chain_[i]->OutputActivation();
  }
  for (std::size_t j = i + 1; j < chain_.size() && chain_[j]->NumWeights() == 0; ++j) {
    if (chain_[j]->OutputActivation() != math::Activation::kIdentity) {
      return chain_[j]->OutputActivation();
    }
  }
  return math::Activation::kIdentity;
}

void Model::Init(std::span<float> params, std::uint64_t seed) const {
  assert(params.size() == num_params_);
  std::fill(params.begin(), params.end(), 0.0f);
  for (std::size_t l = 0; l < chain_.size(); ++l) {
    const Layer& layer = *chain_[l];
    const math::Activation activation = FollowingActivation(l);
    float* w = params.data() + offsets_[l];
    for (std::size_t i = 0; i < layer.NumWeights(); ++i) {
      w[i] = InitialValue(spec_.init, activation, layer.FanIn(), layer.FanOut(), l, i, seed);
    }
    for (std::size_t i = layer.NumWeights(); i < layer.NumParams(); ++i) {
      w[i] = layer.InitialParam(i);
    }
  }
}

float InitialValue(InitScheme scheme, math::Activation activation, int fan_in, int fan_out,
                   std::size_t layer_index, std::size_t index, std::uint64_t seed) {
  if (scheme == InitScheme::kAuto) {
    scheme = activation == math::Activation::kRelu ? InitScheme::kHe : InitScheme::kXavier;
  }
  data::SplitMix64 rng(data::MixSeed(data::MixSeed(seed, layer_index), index));
  if (scheme == InitScheme::kHe) {
    return static_cast<float>(rng.Normal() * std::sqrt(2.0 / static_cast<double>(fan_in)));
  }
  const double limit = std::sqrt(6.0 / static_cast<double>(fan_in + fan_out));
  return static_cast<float>((2.0 * rng.Uniform() - 1.0) * limit);
}

float InitialWeight(const ModelSpec& spec, const LayerView& layer, std::size_t layer_index,
                    std::size_t index, std::uint64_t seed) {
  return InitialValue(spec.init, layer.activation, layer.in, layer.out, layer_index, index, seed);
}

const float* Model::Forward(const float* params, const float* x, Workspace& ws,
                            const LayerPass& pass, int first) const {
  assert(first + pass.rows <= ws.capacity());
  const float* input = x;
  for (std::size_t l = 0; l < chain_.size(); ++l) {
    float* out = ws.activations_[l].data() + Floats(first, chain_[l]->output().Size());
    chain_[l]->Forward(params + offsets_[l], input, out, For(pass, ws, l));
    input = out;
  }
  return input;
}

const float* Model::Forward(const float* params, const float* x, int rows, Workspace& ws) const {
  return Forward(params, x, ws, {.rows = rows, .scratch = ws.scratch_.data()});
}

LossValue Model::Evaluate(const float* params, const float* x, const float* y, int rows,
                          Workspace& ws) const {
  return EvaluateRows(params, x, y, 0, rows, ws);
}

LossValue Model::ForwardBackward(const float* params, const float* x, const float* y, int rows,
                                 float weight_decay, float* grad, Workspace& ws,
                                 const GradientFinished& finished) const {
  const LayerPass pass{
      .rows = rows, .training = true, .noise_seed = ws.noise_seed_, .scratch = ws.scratch_.data()};
  const float* out = Forward(params, x, ws, pass);
  float* delta = ws.delta_a_.data();
  float* next_delta = ws.delta_b_.data();
  const LossValue value = ComputeLoss(spec_.loss, out, y, rows, spec_.outputs, delta);

  for (std::size_t l = chain_.size(); l-- > 0;) {
    const float* input = l == 0 ? x : ws.activations_[l - 1].data();
    chain_[l]->Backward(params + offsets_[l], input, ws.activations_[l].data(), delta,
                        l == 0 ? nullptr : next_delta, grad + offsets_[l], For(pass, ws, l));
    std::swap(delta, next_delta);
    const std::size_t count = chain_[l]->NumParams();
    if (count == 0) continue;
    if (weight_decay != 0.0f) {
      // The layer's weights come first in its parameters (ParamRange of weights_).
      const std::size_t weights = chain_[l]->NumWeights();
      math::Axpy(weight_decay, {params + offsets_[l], weights}, {grad + offsets_[l], weights});
    }
    if (finished) finished(offsets_[l]);
  }
  return value;
}

LayerPass Model::For(const LayerPass& pass, Workspace& ws, std::size_t l) {
  LayerPass own = pass;
  own.state = ws.states_[l].data();
  return own;
}

void Model::UpdateStatistics(float* params, Workspace& ws) const {
  for (std::size_t l = 0; l < chain_.size(); ++l) {
    if (chain_[l]->StateFloats() > 0) {
      chain_[l]->UpdateStatistics(params + offsets_[l], ws.states_[l].data());
    }
  }
}

double Model::WeightDecayPenalty(const float* params, float weight_decay) const {
  if (weight_decay == 0.0f) return 0.0;
  double sum = 0.0;
  for (const ParamRange& w : weights_) sum += math::SquaredNorm({params + w.offset, w.count});
  return 0.5 * weight_decay * sum;
}

void GatherRanges(std::span<const ParamRange> ranges, const float* params, float* packed) {
  for (const ParamRange& r : ranges) packed = std::copy_n(params + r.offset, r.count, packed);
}

void ScatterRanges(std::span<const ParamRange> ranges, const float* packed, float* params) {
  for (const ParamRange& r : ranges) {
    std::copy_n(packed, r.count, params + r.offset);
    packed += r.count;
  }
}

std::size_t RangesSize(std::span<const ParamRange> ranges) {
  std::size_t size = 0;
  for (const ParamRange& r : ranges) size += r.count;
  return size;
}

}  // namespace dtrain::model
