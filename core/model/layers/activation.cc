// relu, tanh, sigmoid as layers: out = act(in), elementwise, any shape.
#include <algorithm>

#include "core/model/graph_writer.h"
#include "core/model/layer_type.h"

namespace dtrain::model::layers {
namespace activation_layer {

class ActivationLayer final : public Layer {
 public:
  ActivationLayer(Shape input, math::Activation activation)
      : Layer(input, input), activation_(activation) {}

  math::Activation OutputActivation() const override { return activation_; }

  void Forward(const float*, const float* in, float* out, const LayerPass& pass) const override {
    math::Activate(in, out, Count(pass), activation_);
  }

  std::string WriteGraph(const float*, const std::string& in, GraphWriter& graph) const {
    return WriteActivation(graph, in, activation_);
  }

  bool SplitsRows() const override { return true; }

  void Backward(const float*, const float*, const float* out, float* dout, float* din, float*,
                const LayerPass& pass) const override {
    const std::size_t n = Count(pass);
    math::ActivationBackward(out, dout, n, activation_);
    if (din != nullptr) std::copy(dout, dout + n, din);
  }

 private:
  std::size_t Count(const LayerPass& pass) const {
    return static_cast<std::size_t>(pass.rows) * input().Size();
  }
  math::Activation activation_;
};

Result<std::unique_ptr<Layer>> MakeActivation(const LayerSpec& spec, Shape input, int /*outputs*/) {
  return std::unique_ptr<Layer>(std::make_unique<ActivationLayer>(input, spec.activation));
}

constexpr LayerSpelling kNames[] = {
    {"relu", {.kind = LayerKind::kActivation, .activation = math::Activation::kRelu}},
    {"tanh", {.kind = LayerKind::kActivation, .activation = math::Activation::kTanh}},
    {"sigmoid", {.kind = LayerKind::kActivation, .activation = math::Activation::kSigmoid}}};

}  // namespace activation_layer

extern constexpr LayerType kActivationLayer{
    .kind = LayerKind::kActivation,
    .spellings = activation_layer::kNames,
    .keys = {},
    .make = activation_layer::MakeActivation,
    .write_graph = WriteGraphOf<activation_layer::ActivationLayer>,
    .named_by_activation = true};

}  // namespace dtrain::model::layers
