// OnnxGraph: model::GraphWriter (core/model/graph_writer.h) over an ONNX GraphProto — constants
// as initializers, nodes in the order written. The protobuf types stay in core/onnx's .cc files:
// this header only names the graph.
//
//   ::onnx::GraphProto proto;
//   OnnxGraph graph(proto);
//   std::string y = graph.Node("Relu", {"input"});
//
// Invariant: every name it returns is unique in the graph (a stem and a counter). One thread.
#pragma once

#include <string>
#include <vector>

#include "core/model/graph_writer.h"

namespace onnx {
class GraphProto;
}

namespace dtrain::onnx_export {

class OnnxGraph final : public model::GraphWriter {
 public:
  explicit OnnxGraph(::onnx::GraphProto& graph) : graph_(graph) {}

  std::string Constant(std::vector<float> values, std::vector<std::int64_t> dims) override;
  std::string IntConstant(std::vector<std::int64_t> values,
                          std::vector<std::int64_t> dims) override;
  std::string Node(std::string_view op, std::vector<std::string> inputs,
                   std::vector<model::GraphAttribute> attributes = {},
                   std::string output = {}) override;

 private:
  std::string Fresh(std::string_view stem);

  ::onnx::GraphProto& graph_;
  int next_ = 0;
};

}  // namespace dtrain::onnx_export
