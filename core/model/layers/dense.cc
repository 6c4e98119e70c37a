// dense: out = act(in * W + b), W [inputs x units] row-major, then b [units]. A spatial input is
// taken flat.
#include <algorithm>

#include "core/math/elementwise.h"
#include "core/math/gemm.h"
#include "core/model/graph_writer.h"
#include "core/model/layer_type.h"

namespace dtrain::model::layers {
namespace dense_layer {

using math::Trans;

class Dense final : public Layer {
 public:
  Dense(Shape input, int units, math::Activation activation)
      : Layer(input, Shape{units, 1, 1}),
        in_(static_cast<int>(input.Size())),
        out_(units),
        activation_(activation) {}

  std::size_t NumParams() const override { return NumWeights() + static_cast<std::size_t>(out_); }
  std::size_t NumWeights() const override {
    return static_cast<std::size_t>(in_) * static_cast<std::size_t>(out_);
  }
  int FanIn() const override { return in_; }
  int FanOut() const override { return out_; }
  math::Activation OutputActivation() const override { return activation_; }

  void Forward(const float* params, const float* in, float* out,
               const LayerPass& pass) const override {
    math::Gemm(Trans::kNo, Trans::kNo, pass.rows, out_, in_, 1.0f, in, in_, params, out_, 0.0f, out,
               out_);
    math::AddBiasActivate(out, pass.rows, out_, params + NumWeights(), activation_);
  }

  void Backward(const float* params, const float* in, const float* out, float* dout, float* din,
                float* dparams, const LayerPass& pass) const override {
    BackwardRows(params, in, out, dout, din, pass);
    ParamGradient(params, in, dout, pass.rows, 0.0f, dparams, 0, NumParams());
  }

  // Gemm(x, W, b) on the input taken flat, then the activation.
  std::string WriteGraph(const float* params, const std::string& in, GraphWriter& graph) const {
    const std::string x = FlatValue(graph, in, input());
    const std::string w = graph.Constant({params, params + NumWeights()}, {in_, out_});
    const std::string b = graph.Constant({params + NumWeights(), params + NumParams()}, {out_});
    return WriteActivation(graph, graph.Node("Gemm", {x, w, b}), activation_);
  }

  bool SplitsRows() const override { return true; }

  // dout *= act'(out); din = dout * W^T.
  void BackwardRows(const float* params, const float*, const float* out, float* dout, float* din,
                    const LayerPass& pass) const override {
    const int rows = pass.rows;
    math::ActivationBackward(out, dout, static_cast<std::size_t>(rows) * out_, activation_);
    if (din != nullptr) {
      math::Gemm(Trans::kNo, Trans::kYes, rows, in_, out_, 1.0f, dout, out_, params, out_, 0.0f,
                 din, in_);
    }
  }

  // The rows [i0, i1) of dW = in^T * dout (+ wd W) that start in [begin, end) (row i of W, input
  // feature i, starts at i * units), and db = column sums of dout if it starts there.
  math::PartRange ParamGradient(const float* params, const float* in, const float* dout, int rows,
                                float weight_decay, float* dparams, std::size_t begin,
                                std::size_t end) const override {
    const auto width = static_cast<std::size_t>(out_), inputs = static_cast<std::size_t>(in_);
    const std::size_t i0 = std::min(inputs, (begin + width - 1) / width);
    const std::size_t i1 = std::min(inputs, (end + width - 1) / width);
    const bool bias = begin <= NumWeights() && NumWeights() < end;
    if (i1 > i0) {
      const auto n = static_cast<int>(i1 - i0);
      float* dw = dparams + i0 * width;
      math::Gemm(Trans::kYes, Trans::kNo, n, out_, rows, 1.0f, in + i0, in_, dout, out_, 0.0f, dw,
                 out_);
      if (weight_decay != 0.0f) {
        const std::size_t count = (i1 - i0) * width;
        math::Axpy(weight_decay, {params + i0 * width, count}, {dw, count});
      }
    }
    if (bias) math::ColumnSums(dout, rows, out_, 0.0f, dparams + NumWeights());
    // With the bias in the range, i1 is the last row: the rows and b are one run.
    return {i0 * width, bias ? NumParams() : i1 * width};
  }

 private:
  int in_, out_;
  math::Activation activation_;
};

Result<std::unique_ptr<Layer>> MakeDense(const LayerSpec& spec, Shape input, int outputs) {
  const int units = spec.units > 0 ? spec.units : outputs;
  if (units < 1) return Status::Error("dense needs units >= 1");
  return std::unique_ptr<Layer>(std::make_unique<Dense>(input, units, spec.activation));
}

std::string Summary(const LayerSpec& layer, int outputs) {
  return "dense " + std::to_string(layer.units > 0 ? layer.units : outputs) +
         SummaryActivation(layer.activation);
}

constexpr LayerSpelling kNames[] = {{"dense", {.kind = LayerKind::kDense}}};
constexpr LayerKey kKeys[] = {
    IntKey("units", &LayerSpec::units, 1, kMaxLayerWidth)
        .RequiredUnlessLast("dense needs units (only the last layer may leave them to the data)"),
    ActivationKey("activation")};

}  // namespace dense_layer

extern constexpr LayerType kDenseLayer{.kind = LayerKind::kDense,
                                       .spellings = dense_layer::kNames,
                                       .keys = dense_layer::kKeys,
                                       .make = dense_layer::MakeDense,
                                       .write_graph = WriteGraphOf<dense_layer::Dense>,
                                       .summary = dense_layer::Summary};

}  // namespace dtrain::model::layers
