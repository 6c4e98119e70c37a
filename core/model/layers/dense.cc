// dense: out = act(in * W + b), W [inputs x units] row-major, then b [units]. A spatial input is
// taken flat.
#include "core/math/gemm.h"
#include "core/model/layers/layers.h"

namespace dtrain::model::layers {
namespace {

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
    const int rows = pass.rows;
    math::ActivationBackward(out, dout, static_cast<std::size_t>(rows) * out_, activation_);
    // dW = in^T * dout; db = column sums of dout; din = dout * W^T.
    math::Gemm(Trans::kYes, Trans::kNo, in_, out_, rows, 1.0f, in, in_, dout, out_, 0.0f, dparams,
               out_);
    math::ColumnSums(dout, rows, out_, 0.0f, dparams + NumWeights());
    if (din != nullptr) {
      math::Gemm(Trans::kNo, Trans::kYes, rows, in_, out_, 1.0f, dout, out_, params, out_, 0.0f,
                 din, in_);
    }
  }

 private:
  int in_, out_;
  math::Activation activation_;
};

}  // namespace

Result<std::unique_ptr<Layer>> MakeDense(const LayerSpec& spec, Shape input, int outputs) {
  const int units = spec.units > 0 ? spec.units : outputs;
  if (units < 1) return Status::Error("dense needs units >= 1");
  return std::unique_ptr<Layer>(std::make_unique<Dense>(input, units, spec.activation));
}

}  // namespace dtrain::model::layers
