#include "core/onnx/onnx_graph.h"

#include <onnx/onnx_pb.h>

#include <cctype>
#include <type_traits>

namespace dtrain::onnx_export {
namespace {

template <typename T>
void SetTensor(::onnx::TensorProto* tensor, const std::string& name, int type,
               const std::vector<T>& values, const std::vector<std::int64_t>& dims) {
  tensor->set_name(name);
  tensor->set_data_type(type);
  for (std::int64_t d : dims) tensor->add_dims(d);
  // Little-endian, as ONNX's raw_data is (and every machine dtrain builds for).
  tensor->set_raw_data(values.data(), values.size() * sizeof(T));
}

}  // namespace

std::string OnnxGraph::Fresh(std::string_view stem) {
  std::string name;
  for (char c : stem) name += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name + "_" + std::to_string(next_++);
}

std::string OnnxGraph::Constant(std::vector<float> values, std::vector<std::int64_t> dims) {
  std::string name = Fresh("const");
  SetTensor(graph_.add_initializer(), name, ::onnx::TensorProto::FLOAT, values, dims);
  return name;
}

std::string OnnxGraph::IntConstant(std::vector<std::int64_t> values,
                                   std::vector<std::int64_t> dims) {
  std::string name = Fresh("const");
  SetTensor(graph_.add_initializer(), name, ::onnx::TensorProto::INT64, values, dims);
  return name;
}

std::string OnnxGraph::Node(std::string_view op, std::vector<std::string> inputs,
                            std::vector<model::GraphAttribute> attributes, std::string output) {
  ::onnx::NodeProto* node = graph_.add_node();
  node->set_op_type(std::string(op));
  if (output.empty()) output = Fresh(op);
  node->set_name(output);
  for (std::string& input : inputs) node->add_input(std::move(input));
  node->add_output(output);
  for (const model::GraphAttribute& attribute : attributes) {
    ::onnx::AttributeProto* a = node->add_attribute();
    a->set_name(attribute.name);
    std::visit(
        [a](const auto& value) {
          using T = std::decay_t<decltype(value)>;
          if constexpr (std::is_same_v<T, std::int64_t>) {
            a->set_type(::onnx::AttributeProto::INT);
            a->set_i(value);
          } else if constexpr (std::is_same_v<T, float>) {
            a->set_type(::onnx::AttributeProto::FLOAT);
            a->set_f(value);
          } else {
            a->set_type(::onnx::AttributeProto::INTS);
            for (std::int64_t v : value) a->add_ints(v);
          }
        },
        attribute.value);
  }
  return output;
}

}  // namespace dtrain::onnx_export
