// GraphWriter: how a layer writes its inference form into an exported graph (the ONNX file of
// core/onnx/), without knowing the file format. Each layer's form lives next to its compute, in
// its file of core/model/layers/ (Layer::WriteGraph); core/onnx/ implements the interface.
//
//   std::string y = graph.Node("Gemm", {x, graph.Constant(w, {in, out}), graph.Constant(b,
//   {out})}); y = WriteActivation(graph, y, math::Activation::kRelu);
//
// Values between layers follow one layout: a sample of flat shape (Shape::Flat) is a [N, Size()]
// tensor, any other shape a [N, C, H, W] tensor (ONNX's channel-first order, while dtrain keeps
// a sample's values height, width, channel: FlatValue converts). Operator and attribute names are
// ONNX's (default domain, opset 13). Names returned are unique within the graph.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "core/math/elementwise.h"
#include "core/model/layer_spec.h"

namespace dtrain::model {

struct GraphAttribute {
  std::string name;
  std::variant<std::int64_t, float, std::vector<std::int64_t>> value;
};

class GraphWriter {
 public:
  virtual ~GraphWriter() = default;
  // A float32 constant of shape `dims` (values row-major, as many as the dims' product).
  virtual std::string Constant(std::vector<float> values, std::vector<std::int64_t> dims) = 0;
  // An int64 constant (shapes, axes) of shape `dims`.
  virtual std::string IntConstant(std::vector<std::int64_t> values,
                                  std::vector<std::int64_t> dims) = 0;
  // A node of operator `op` with one output, named `output` (or a fresh name when empty).
  virtual std::string Node(std::string_view op, std::vector<std::string> inputs,
                           std::vector<GraphAttribute> attributes = {},
                           std::string output = {}) = 0;
};

// `value` through the activation (unchanged for identity).
std::string WriteActivation(GraphWriter& graph, const std::string& value,
                            math::Activation activation);
// `value` of sample shape `shape` as [N, Size()] in dtrain's order (height, width, channel): an
// image is transposed to channel-last, then flattened.
std::string FlatValue(GraphWriter& graph, const std::string& value, Shape shape);
// `value` of sample shape `shape` as [N, C, H, W] (a flat one becomes [N, C, 1, 1]).
std::string ImageValue(GraphWriter& graph, const std::string& value, Shape shape);
// An image [N, C, H, W] in the layout of `shape` (a flat shape's [N, C]).
std::string ValueOfShape(GraphWriter& graph, const std::string& image, Shape shape);

}  // namespace dtrain::model
