#include "core/model/graph_writer.h"

namespace dtrain::model {

std::string WriteActivation(GraphWriter& graph, const std::string& value,
                            math::Activation activation) {
  switch (activation) {
    case math::Activation::kIdentity:
      return value;
    case math::Activation::kRelu:
      return graph.Node("Relu", {value});
    case math::Activation::kTanh:
      return graph.Node("Tanh", {value});
    case math::Activation::kSigmoid:
      return graph.Node("Sigmoid", {value});
  }
  return value;
}

std::string FlatValue(GraphWriter& graph, const std::string& value, Shape shape) {
  if (shape.Flat()) return value;
  const std::string channel_last =
      graph.Node("Transpose", {value}, {{"perm", std::vector<std::int64_t>{0, 2, 3, 1}}});
  return graph.Node("Flatten", {channel_last}, {{"axis", std::int64_t{1}}});
}

std::string ImageValue(GraphWriter& graph, const std::string& value, Shape shape) {
  if (!shape.Flat()) return value;
  return graph.Node("Unsqueeze", {value, graph.IntConstant({2, 3}, {2})});
}

std::string ValueOfShape(GraphWriter& graph, const std::string& image, Shape shape) {
  if (!shape.Flat()) return image;
  return graph.Node("Flatten", {image}, {{"axis", std::int64_t{1}}});
}

}  // namespace dtrain::model
