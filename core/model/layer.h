// Layer: one step of a model's forward and backward pass over a batch, reading its parameters
// from a slice of the model's flat parameter vector. Every model — the shorthand types and the
// layer lists — is a chain of Layers (see model.h).
//
//   Result<std::unique_ptr<Layer>> conv = MakeLayer(spec, /*input=*/Shape{1, 28, 28},
//   /*outputs=*/10); conv.value()->Forward(params, x, out, pass);            // out: [rows x
//   output().Size()] conv.value()->Backward(params, x, out, dout, dx, dparams, pass);
//
// Invariants: a layer's parameters are NumParams() floats, the first NumWeights() of them the
// weights (randomly initialised, weight-decayed), the rest InitialParam at start, not decayed
// (biases; batchnorm's scales, shifts and running statistics, whose gradient is always 0).
// Activations are [rows x Size()] row-major, each row one sample in Shape's layout. Layers are
// immutable after construction and hold no batch data: safe for concurrent use with disjoint
// buffers. Each layer lives in core/model/layers/, one file with its forward and backward.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/math/part_range.h"
#include "core/model/layer_spec.h"
#include "core/status.h"

namespace dtrain::model {

// [offset, offset + count) of a parameter vector: the model's weights a weight decay applies to,
// or running statistics (Layer::RunningStatistics, Model::StatisticRanges).
struct ParamRange {
  std::size_t offset = 0, count = 0;
};

// One tensor of a parameter vector, for methods that treat a layer's weights as a matrix
// (gradient compression, compress/compression_plan.h): a layer's weights as FanIn() rows of
// NumWeights() / FanIn() floats, row-major, or a layer's other parameters (biases, batchnorm's
// scales and statistics) as one row. rows * cols floats from `offset`.
struct ParamTensor {
  std::size_t offset = 0, rows = 1, cols = 0;
  std::string name;  // for people: "layer 2 (dense) weights", "layer 2 (dense) biases"
  std::size_t count() const { return rows * cols; }
};

// What one call of Forward or Backward may use besides its tensors.
struct LayerPass {
  int rows = 0;
  bool training = false;         // dropout drops only while training
  std::uint64_t noise_seed = 0;  // the pass's dropout masks: same seed, same masks
  float* scratch = nullptr;      // ScratchFloats(capacity) floats, shared by the layers
  float* state = nullptr;        // StateFloats() floats of this layer's own, kept between calls
};

class Layer {
 public:
  Layer(Shape input, Shape output) : input_(input), output_(output) {}
  virtual ~Layer() = default;
  Layer(const Layer&) = delete;
  Layer& operator=(const Layer&) = delete;

  Shape input() const { return input_; }
  Shape output() const { return output_; }
  virtual std::size_t NumParams() const { return 0; }
  virtual std::size_t NumWeights() const { return 0; }
  // The fan-in and fan-out that scale the initial weights (He, Xavier).
  virtual int FanIn() const { return 0; }
  virtual int FanOut() const { return 0; }
  // The activation this layer applies to its output, for choosing He or Xavier weights.
  virtual math::Activation OutputActivation() const { return math::Activation::kIdentity; }
  // Working memory a pass of up to `capacity` rows needs, in floats.
  virtual std::size_t ScratchFloats(int /*capacity*/) const { return 0; }
  // Memory of the layer's own that a training Forward leaves for its Backward and for
  // UpdateStatistics (batchnorm's batch statistics), in floats.
  virtual std::size_t StateFloats() const { return 0; }
  // The row-split pass (several threads on one batch, Model::ForwardBackwardRows): true when the
  // layer's passes go row by row, it keeps no scratch or state, and its parameter gradient is a
  // sum over the rows that ParamGradient computes in parts.
  virtual bool SplitsRows() const { return false; }
  // Backward over a slice of the batch's rows without the parameter gradient: dout becomes what
  // ParamGradient reads (the gradient before the activation), din (unless null) is written. For
  // a layer without parameters, its Backward.
  virtual void BackwardRows(const float* params, const float* in, const float* out, float* dout,
                            float* din, const LayerPass& pass) const {
    Backward(params, in, out, dout, din, nullptr, pass);
  }
  // The parameter gradient over all `rows` rows of a batch, from its inputs and the douts
  // BackwardRows left, plus weight_decay x the weights, for the units of it (a layer's own
  // grouping of coordinates: a dense layer's rows of W, and b) whose first coordinate lies in
  // [begin, end) of the layer's parameters. Calls over ranges that partition [0, NumParams())
  // compute every coordinate once, and may run at once. Returns the coordinates it wrote, one
  // contiguous run (empty: none, as for a layer without parameters).
  virtual math::PartRange ParamGradient(const float* /*params*/, const float* /*in*/,
                                        const float* /*dout*/, int /*rows*/,
                                        float /*weight_decay*/, float* /*dparams*/,
                                        std::size_t /*begin*/, std::size_t /*end*/) const {
    return {};
  }
  // The starting value of parameter i >= NumWeights().
  virtual float InitialParam(std::size_t /*i*/) const { return 0.0f; }
  // Folds the statistics of the last training Forward (in `state`) into the running ones kept
  // in `params`: the one place a layer changes its parameters outside the optimizer.
  virtual void UpdateStatistics(float* /*params*/, const float* /*state*/) const {}
  // Where among this layer's parameters UpdateStatistics writes (count 0: nowhere).
  virtual ParamRange RunningStatistics() const { return {}; }

  // out [rows x output().Size()] from in [rows x input().Size()].
  virtual void Forward(const float* params, const float* in, float* out,
                       const LayerPass& pass) const = 0;
  // Given dout = dLoss/d(out) (which it may overwrite), writes dLoss/d(params) to dparams
  // (NumParams floats, overwritten) and, unless din is null, dLoss/d(in) to din. `in` and `out`
  // are this pass's Forward input and output.
  virtual void Backward(const float* params, const float* in, const float* out, float* dout,
                        float* din, float* dparams, const LayerPass& pass) const = 0;

 private:
  Shape input_, output_;
};

// The layer `spec` describes on a sample of shape `input`; `outputs` stands for a dense layer's
// units where they are 0. The error says why the layer does not fit its input ("kernel 5 is
// larger than the 3x3 input padded by 0").
Result<std::unique_ptr<Layer>> MakeLayer(const LayerSpec& spec, Shape input, int outputs);

}  // namespace dtrain::model
