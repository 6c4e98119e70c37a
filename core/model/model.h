// Model: a feed-forward network — a chain of Layers (core/model/layer.h) built from the spec's
// ModelLayers — over ONE flat float32 parameter vector. Layer i owns NumParams floats from
// ParamOffset(i), its weights first, laid out back to back, so the gradient and optimizer state
// share the layout. A dense layer's slice is W [in x out] (row-major) followed by b [out].
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
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/math/buffer.h"
#include "core/model/layer.h"
#include "core/model/loss.h"
#include "core/model/spec.h"

namespace dtrain::model {

// A dense layer of a shorthand model, as model parallelism splits it.
struct LayerView {
  int in = 0;
  int out = 0;
  std::size_t weight_offset = 0;  // W: in * out floats
  std::size_t bias_offset = 0;    // b: out floats, right after W
  math::Activation activation = math::Activation::kIdentity;
};

// The values of `ranges` of a parameter vector, back to back in `packed` (Gather), and back
// (Scatter): how a replica keeps its running statistics across an exchange of parameters.
void GatherRanges(std::span<const ParamRange> ranges, const float* params, float* packed);
void ScatterRanges(std::span<const ParamRange> ranges, const float* packed, float* params);
std::size_t RangesSize(std::span<const ParamRange> ranges);

class Model;

// Activation memory for batches of up to `capacity` rows, and the seed a ForwardBackward through
// it draws its dropout masks from (a trainer sets a new one every step). A workspace made for the
// row-split pass also keeps every layer's output gradient (Model::ForwardBackwardRows).
class Workspace {
 public:
  Workspace(const Model& model, int capacity, bool row_split = false);
  int capacity() const { return capacity_; }
  void SetNoiseSeed(std::uint64_t seed) { noise_seed_ = seed; }

 private:
  friend class Model;
  int capacity_;
  std::vector<math::FloatBuffer> activations_;  // output of each layer, [capacity x out]
  math::FloatBuffer delta_a_, delta_b_;         // back-propagated gradients (ping-pong)
  std::vector<math::FloatBuffer> deltas_;       // row split: each layer's output gradient
  math::FloatBuffer scratch_;                   // the largest layer's ScratchFloats
  std::vector<math::FloatBuffer> states_;       // each layer's StateFloats
  std::uint64_t noise_seed_ = 0;
};

class Model {
 public:
  explicit Model(ModelSpec spec);  // spec must pass ValidateModelSpec

  const ModelSpec& spec() const { return spec_; }
  // The layers, first to last, and where each one's parameters start.
  std::size_t NumLayers() const { return chain_.size(); }
  const Layer& layer(std::size_t i) const { return *chain_[i]; }
  std::size_t ParamOffset(std::size_t i) const { return offsets_[i]; }
  // A shorthand model's dense layers (what model parallelism splits); empty for "sequential".
  const std::vector<LayerView>& layers() const { return layers_; }
  const std::vector<ParamRange>& WeightRanges() const { return weights_; }
  // Every parameter of the model, as tensors in order (see ParamTensor): each layer's weights,
  // then its other parameters.
  std::vector<ParamTensor> Tensors() const;
  // The running statistics (batchnorm's mean and variance): parameters the optimizer never moves
  // (their gradient is 0) and UpdateStatistics does. Each replica keeps its own; empty for most
  // models.
  const std::vector<ParamRange>& StatisticRanges() const { return statistics_; }
  std::size_t NumParams() const { return num_params_; }
  // The most values per sample at any point of the chain, input included.
  std::size_t MaxWidth() const;

  // Weights from the spec's scheme (He: N(0, 2/fan_in); Xavier: U(±sqrt(6/(fan_in+fan_out)))),
  // biases 0; each weight is InitialWeight of its place. A pure function of (spec, seed).
  void Init(std::span<float> params, std::uint64_t seed) const;

  // Outputs (logits, or predictions for mse) of `rows` inputs x [rows x inputs], as at
  // evaluation (no dropout); the returned pointer is valid until the workspace is used again.
  const float* Forward(const float* params, const float* x, int rows, Workspace& ws) const;

  // Told, during a pass, that the gradient's floats from `begin` to the end are final (weight
  // decay included): after each layer with parameters, from the last layer's first float down.
  using GradientFinished = std::function<void(std::size_t begin)>;

  // Loss of the batch and, overwriting `grad`, its gradient d(mean loss + wd/2 * |W|^2)/d params.
  // The returned loss_sum excludes the weight-decay term (see WeightDecayPenalty). `finished`
  // (if set) hears of each layer's gradient as soon as its backward is done.
  LossValue ForwardBackward(const float* params, const float* x, const float* y, int rows,
                            float weight_decay, float* grad, Workspace& ws,
                            const GradientFinished& finished = {}) const;

  // Loss (summed over rows) and correct count of a batch, without a gradient.
  LossValue Evaluate(const float* params, const float* x, const float* y, int rows,
                     Workspace& ws) const;

  // wd/2 * sum of squared weights (biases excluded): the L2 term ForwardBackward differentiates.
  double WeightDecayPenalty(const float* params, float weight_decay) const;

  // The row-split pass, for several threads on one batch (LocalNetwork): every layer SplitsRows.
  // ForwardBackwardRows runs rows [first, first + rows) of a batch of total_rows rows (x and y
  // are the whole batch's) forward, through the loss (scaled to the batch's mean) and backward
  // without the parameter gradient, on those rows of a row-split workspace; once every slice has,
  // ParamGradient computes part `part` of `parts` of the gradient of ForwardBackward (weight decay
  // included) from all the rows. Slices, and parts, may run at once on one workspace. After each
  // layer's share of the part, `done` (if set) gets the coordinates [begin, end) of `grad` it
  // filled, to use while they are in cache; the parts' runs together cover every coordinate once.
  bool SplitsRows() const;
  LossValue ForwardBackwardRows(const float* params, const float* x, const float* y, int first,
                                int rows, int total_rows, Workspace& ws) const;
  using GradientDone = std::function<void(std::size_t begin, std::size_t end)>;
  void ParamGradient(const float* params, const float* x, int total_rows, float weight_decay,
                     float* grad, Workspace& ws, int part, int parts,
                     const GradientDone& done = {}) const;
  // The same pass layer by layer, for a caller that uses each layer's gradient as soon as it is
  // final: ForwardRows takes a slice forward through the (scaled) loss; then, for each layer l
  // from the last, BackwardLayerRows of every slice, then LayerParamGradient of every part. The
  // same calls as ForwardBackwardRows and ParamGradient make, so the same bits.
  LossValue ForwardRows(const float* params, const float* x, const float* y, int first, int rows,
                        int total_rows, Workspace& ws) const;
  void BackwardLayerRows(const float* params, const float* x, int first, int rows, Workspace& ws,
                         std::size_t l) const;
  void LayerParamGradient(const float* params, const float* x, int total_rows, float weight_decay,
                          float* grad, Workspace& ws, int part, int parts, std::size_t l,
                          const GradientDone& done = {}) const;
  // Evaluate of rows [first, first + rows) of a batch (x and y the whole batch's), on those rows
  // of the workspace: slices may run at once.
  LossValue EvaluateRows(const float* params, const float* x, const float* y, int first, int rows,
                         Workspace& ws) const;

  // Folds the batch statistics of the workspace's last ForwardBackward into the running ones
  // that `params` keeps (batchnorm); no-op for a model without any.
  void UpdateStatistics(float* params, Workspace& ws) const;

 private:
  // The forward pass of pass.rows rows of x (already at the first of them) into the workspace's
  // rows from `first` on.
  const float* Forward(const float* params, const float* x, Workspace& ws, const LayerPass& pass,
                       int first = 0) const;
  // `pass` with layer l's own state.
  static LayerPass For(const LayerPass& pass, Workspace& ws, std::size_t l);
  // The activation that follows layer i's weights: its own, or the activation layer that comes
  // before the next layer with weights. Chooses He or Xavier.
  math::Activation FollowingActivation(std::size_t i) const;

  ModelSpec spec_;
  std::vector<std::unique_ptr<Layer>> chain_;
  std::vector<std::size_t> offsets_;
  std::vector<LayerView> layers_;
  std::vector<ParamRange> weights_;
  std::vector<ParamRange> statistics_;
  std::size_t num_params_ = 0;
};

// The initial value of weight `index` of the layer at `layer_index` with the given fans: He
// (N(0, 2/fan_in)) or Xavier (U(±sqrt(6/(fan_in+fan_out)))), kAuto choosing He before a relu.
float InitialValue(InitScheme scheme, math::Activation activation, int fan_in, int fan_out,
                   std::size_t layer_index, std::size_t index, std::uint64_t seed);

// The initial value of weight `index` (row-major in W, so row * out + column) of layer
// `layer_index`: a pure function of the seed and the weight's place, so that a partition of the
// model (model parallelism) initialises its own weights alone, exactly as the whole model would.
float InitialWeight(const ModelSpec& spec, const LayerView& layer, std::size_t layer_index,
                    std::size_t index, std::uint64_t seed);

}  // namespace dtrain::model
