// Model: a feed-forward network (linear, logistic, softmax regression or MLP) over ONE flat
// float32 parameter vector. Layers are views: layer l owns W_l [in x out] (row-major) followed
// by b_l [out], laid out back to back, so the gradient and optimizer state share the layout.
//
//   Model model(spec);
//   FloatBuffer params(model.NumParams()), grad(model.NumParams());
//   model.Init(params, seed);
//   Workspace ws(model, batch_size);
//   LossValue v = model.ForwardBackward(params.data(), x, y, rows, 0.0f, grad.data(), ws);
//
// A Model is immutable after construction: safe for concurrent use. A Workspace holds one
// batch's activations: one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/math/buffer.h"
#include "core/model/loss.h"
#include "core/model/spec.h"

namespace dtrain::model {

struct LayerView {
  int in = 0;
  int out = 0;
  std::size_t weight_offset = 0;  // W: in * out floats
  std::size_t bias_offset = 0;    // b: out floats, right after W
  math::Activation activation = math::Activation::kIdentity;
};

class Model;

// Activation memory for batches of up to `capacity` rows.
class Workspace {
 public:
  Workspace(const Model& model, int capacity);
  int capacity() const { return capacity_; }

 private:
  friend class Model;
  int capacity_;
  std::vector<math::FloatBuffer> activations_;  // output of each layer, [capacity x out]
  math::FloatBuffer delta_a_, delta_b_;         // back-propagated gradients (ping-pong)
};

class Model {
 public:
  explicit Model(ModelSpec spec);  // spec must pass ValidateModelSpec

  const ModelSpec& spec() const { return spec_; }
  const std::vector<LayerView>& layers() const { return layers_; }
  std::size_t NumParams() const { return num_params_; }
  int MaxWidth() const;

  // Weights from the spec's scheme (He: N(0, 2/in); Xavier: U(±sqrt(6/(in+out)))), biases 0;
  // each weight is InitialWeight of its place. A pure function of (spec, seed).
  void Init(std::span<float> params, std::uint64_t seed) const;

  // Outputs (logits, or predictions for mse) of `rows` inputs x [rows x inputs]; the returned
  // pointer is valid until the workspace is used again.
  const float* Forward(const float* params, const float* x, int rows, Workspace& ws) const;

  // Loss of the batch and, overwriting `grad`, its gradient d(mean loss + wd/2 * |W|^2)/d params.
  // The returned loss_sum excludes the weight-decay term (see WeightDecayPenalty).
  LossValue ForwardBackward(const float* params, const float* x, const float* y, int rows,
                            float weight_decay, float* grad, Workspace& ws) const;

  // Loss (summed over rows) and correct count of a batch, without a gradient.
  LossValue Evaluate(const float* params, const float* x, const float* y, int rows,
                     Workspace& ws) const;

  // wd/2 * sum of squared weights (biases excluded): the L2 term ForwardBackward differentiates.
  double WeightDecayPenalty(const float* params, float weight_decay) const;

 private:
  ModelSpec spec_;
  std::vector<LayerView> layers_;
  std::size_t num_params_ = 0;
};

// The initial value of weight `index` (row-major in W, so row * out + column) of layer
// `layer_index`: a pure function of the seed and the weight's place, so that a partition of the
// model (model parallelism) initialises its own weights alone, exactly as the whole model would.
float InitialWeight(const ModelSpec& spec, const LayerView& layer, std::size_t layer_index,
                    std::size_t index, std::uint64_t seed);

}  // namespace dtrain::model
