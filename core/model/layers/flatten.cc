// flatten: the sample's values unchanged, as a flat vector (the layout is already row-major).
#include <algorithm>

#include "core/model/graph_writer.h"
#include "core/model/layer_type.h"

namespace dtrain::model::layers {
namespace flatten_layer {

class Flatten final : public Layer {
 public:
  explicit Flatten(Shape input) : Layer(input, Shape{static_cast<int>(input.Size()), 1, 1}) {}

  void Forward(const float*, const float* in, float* out, const LayerPass& pass) const override {
    std::copy(in, in + Count(pass), out);
  }

  // The graph's images are channel-first: back to dtrain's order, then flat.
  std::string WriteGraph(const float*, const std::string& in, GraphWriter& graph) const {
    return FlatValue(graph, in, input());
  }

  bool SplitsRows() const override { return true; }

  void Backward(const float*, const float*, const float*, float* dout, float* din, float*,
                const LayerPass& pass) const override {
    if (din != nullptr) std::copy(dout, dout + Count(pass), din);
  }

 private:
  std::size_t Count(const LayerPass& pass) const {
    return static_cast<std::size_t>(pass.rows) * input().Size();
  }
};

Result<std::unique_ptr<Layer>> MakeFlatten(const LayerSpec& /*spec*/, Shape input,
                                           int /*outputs*/) {
  return std::unique_ptr<Layer>(std::make_unique<Flatten>(input));
}

constexpr LayerSpelling kNames[] = {{"flatten", {.kind = LayerKind::kFlatten}}};

}  // namespace flatten_layer

extern constexpr LayerType kFlattenLayer{.kind = LayerKind::kFlatten,
                                         .spellings = flatten_layer::kNames,
                                         .keys = {},
                                         .make = flatten_layer::MakeFlatten,
                                         .write_graph = WriteGraphOf<flatten_layer::Flatten>};

}  // namespace dtrain::model::layers
