#include "core/onnx/onnx_export.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <exception>
#include <vector>

#include "core/model/layer_type.h"
#include "core/model/model.h"
#include "core/onnx/onnx_graph.h"
#include "core/sparse/sparse_model.h"

namespace dtrain::onnx_export {
namespace {

constexpr std::int64_t kBatch = -1;  // a dimension of any size: the rows, named "N"

// An ONNX model with dtrain's header fields and a graph named `name`, its input `input`
// float32 of `dims`.
::onnx::ModelProto NewModel(const std::string& name, std::vector<std::int64_t> dims) {
  ::onnx::ModelProto model;
  model.set_ir_version(kIrVersion);
  model.set_producer_name("dtrain");
  ::onnx::OperatorSetIdProto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpsetVersion);
  ::onnx::GraphProto* graph = model.mutable_graph();
  graph->set_name(name.empty() ? "dtrain" : name);
  ::onnx::ValueInfoProto* input = graph->add_input();
  input->set_name("input");
  auto* tensor = input->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(::onnx::TensorProto::FLOAT);
  for (std::int64_t d : dims) {
    auto* dim = tensor->mutable_shape()->add_dim();
    if (d == kBatch) {
      dim->set_dim_param("N");
    } else {
      dim->set_dim_value(d);
    }
  }
  return model;
}

void AddMetadata(::onnx::ModelProto& model, const std::string& key, const std::string& value) {
  ::onnx::StringStringEntryProto* entry = model.add_metadata_props();
  entry->set_key(key);
  entry->set_value(value);
}

void DeclareOutput(::onnx::GraphProto& graph, const std::string& name, int type,
                   std::int64_t columns) {
  ::onnx::ValueInfoProto* output = graph.add_output();
  output->set_name(name);
  auto* tensor = output->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(type);
  tensor->mutable_shape()->add_dim()->set_dim_param("N");
  if (columns > 0) tensor->mutable_shape()->add_dim()->set_dim_value(columns);
}

// The outputs from the logits [N, outputs], as dtrain predict reads them (AppendPrediction):
// softmax cross-entropy: `probabilities` (softmax) and `class` (the first largest logit); binary
// cross-entropy: `probabilities` P(1) [N, 1] and `class` 1 where the logit is above 0; mean
// squared error: `value`.
void WriteOutputs(OnnxGraph& graph, ::onnx::GraphProto& proto, const std::string& logits,
                  model::LossType loss, int outputs) {
  switch (loss) {
    case model::LossType::kSoftmaxCrossEntropy:
      graph.Node("Softmax", {logits}, {{"axis", std::int64_t{1}}}, "probabilities");
      graph.Node("ArgMax", {logits}, {{"axis", std::int64_t{1}}, {"keepdims", std::int64_t{0}}},
                 "class");
      break;
    case model::LossType::kBinaryCrossEntropy: {
      graph.Node("Sigmoid", {logits}, {}, "probabilities");
      const std::string positive = graph.Node("Greater", {logits, graph.Constant({0.0f}, {})});
      const std::string flat = graph.Node("Squeeze", {positive, graph.IntConstant({1}, {1})});
      graph.Node("Cast", {flat}, {{"to", std::int64_t{::onnx::TensorProto::INT64}}}, "class");
      break;
    }
    case model::LossType::kMeanSquaredError:
      graph.Node("Identity", {logits}, {}, "value");
      DeclareOutput(proto, "value", ::onnx::TensorProto::FLOAT, outputs);
      return;
  }
  DeclareOutput(proto, "probabilities", ::onnx::TensorProto::FLOAT, outputs);
  DeclareOutput(proto, "class", ::onnx::TensorProto::INT64, 0);
}

// The model's bytes once onnx's checker and strict, type-checking shape inference pass it.
Result<std::string> Checked(const ::onnx::ModelProto& model) {
  try {
    ::onnx::checker::check_model(model);
    ::onnx::ModelProto inferred = model;
    ::onnx::shape_inference::InferShapes(inferred, ::onnx::OpSchemaRegistry::Instance(),
                                         ::onnx::ShapeInferenceOptions(/*check_type_val=*/true,
                                                                       /*strict_mode_val=*/1));
  } catch (const std::exception& e) {
    return Status::Error(std::string("internal error: the ONNX model fails onnx's checks: ") +
                         e.what());
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes)) {
    return Status::Error("internal error: the ONNX model does not serialize");
  }
  return bytes;
}

// The job's scaling on the raw input, as GatherBatch applies it: x * (1 / divisor), or
// (x - mean) * inv_std with the statistics in the input's layout (channel-first for images).
std::string WriteScaling(OnnxGraph& graph, const data::Scaling& scaling, model::Shape shape) {
  if (scaling.kind == data::Scaling::Kind::kConstant) {
    if (scaling.divisor == 1.0f) return "input";
    return graph.Node("Mul", {"input", graph.Constant({1.0f / scaling.divisor}, {})});
  }
  std::vector<float> mean(shape.Size()), inv_std(shape.Size());
  std::vector<std::int64_t> dims{static_cast<std::int64_t>(shape.Size())};
  if (!shape.Flat()) {
    dims = {shape.channels, shape.height, shape.width};
  }
  for (int h = 0; h < shape.height; ++h) {
    for (int w = 0; w < shape.width; ++w) {
      for (int c = 0; c < shape.channels; ++c) {
        const auto from = static_cast<std::size_t>((h * shape.width + w) * shape.channels + c);
        const std::size_t to =
            shape.Flat() ? from
                         : static_cast<std::size_t>((c * shape.height + h) * shape.width + w);
        mean[to] = scaling.mean[from];
        inv_std[to] = scaling.inv_std[from];
      }
    }
  }
  const std::string centred = graph.Node("Sub", {"input", graph.Constant(std::move(mean), dims)});
  return graph.Node("Mul", {centred, graph.Constant(std::move(inv_std), dims)});
}

// A sparse model's index space: 2^hash_bits, the data's features, or (features left to the
// data) one past the largest key it touched.
std::uint64_t IndexSpace(const sparse::SparseModelFile& file) {
  if (file.hash_bits > 0) return std::uint64_t{1} << file.hash_bits;
  if (file.features > 0) return file.features;
  const auto largest = std::max_element(file.keys.begin(), file.keys.end());
  return largest == file.keys.end() ? 1 : std::uint64_t{*largest} + 1;
}

}  // namespace

Result<std::string> EncodeOnnx(const train::ModelFile& file) {
  if (Status valid = model::ValidateModelSpec(file.spec); !valid.ok()) return valid;
  const model::Model net(file.spec);
  if (file.params.size() != net.NumParams()) {
    return Status::Error("the model has " + std::to_string(file.params.size()) +
                         " parameters, its spec needs " + std::to_string(net.NumParams()));
  }
  const model::Shape shape = model::ModelInputShape(file.spec);
  const bool standardize = file.scaling.kind == data::Scaling::Kind::kStandardize;
  if (standardize &&
      (file.scaling.mean.size() != shape.Size() || file.scaling.inv_std.size() != shape.Size())) {
    return Status::Error("the model's feature scaling does not match its " +
                         std::to_string(shape.Size()) + " inputs");
  }
  ::onnx::ModelProto model = NewModel(
      file.job_name,
      shape.Flat() ? std::vector<std::int64_t>{kBatch, static_cast<std::int64_t>(shape.Size())}
                   : std::vector<std::int64_t>{kBatch, shape.channels, shape.height, shape.width});
  const std::string spec_text = model::FormatModelSpec(file.spec);
  model.set_doc_string("dtrain model " + spec_text);
  AddMetadata(model, "dtrain.spec", spec_text);
  AddMetadata(model, "dtrain.step", std::to_string(file.step));
  ::onnx::GraphProto& proto = *model.mutable_graph();
  OnnxGraph graph(proto);
  std::string value = WriteScaling(graph, file.scaling, shape);
  const std::vector<model::LayerSpec> layers = model::ModelLayers(file.spec);
  for (std::size_t i = 0; i < net.NumLayers(); ++i) {
    value = model::LayerTypeOf(layers[i].kind)
                .write_graph(net.layer(i), file.params.data() + net.ParamOffset(i), value, graph);
  }
  WriteOutputs(graph, proto, value, file.spec.loss, file.spec.outputs);
  return Checked(model);
}

Result<std::string> EncodeSparseOnnx(const sparse::SparseModelFile& file) {
  if (Status valid = sparse::ValidateSparseModelSpec(file.spec); !valid.ok()) return valid;
  const std::uint64_t space = IndexSpace(file);
  if (space > kMaxSparseInputs) {
    const std::string why = file.hash_bits > 0
                                ? "data.hash_bits = " + std::to_string(file.hash_bits) + " gives " +
                                      std::to_string(space) + " hashed features"
                                : "its data has " + std::to_string(space) + " features";
    return Status::Error(
        "a sparse model exports as a dense ONNX model over its whole index "
        "space, and " +
        why + ", more than " + std::to_string(kMaxSparseInputs) +
        " (2^20); train with data.hash_bits of 20 or fewer to export it");
  }
  const sparse::SparseModel net(file.spec);
  const std::size_t width = net.SlotWidth();
  if (file.slots.size() != file.keys.size() * width || file.globals.size() != net.GlobalWidth()) {
    return Status::Error("the sparse model's slots do not match its keys");
  }
  const auto d = static_cast<std::int64_t>(space);
  const auto rows = static_cast<std::size_t>(space);
  const int outputs = net.Outputs();
  const bool fm = file.spec.type == sparse::SparseModelType::kFm;
  const std::size_t weights = fm ? 1 : static_cast<std::size_t>(outputs);
  const auto factors = fm ? static_cast<std::size_t>(file.spec.factors) : 0;
  std::vector<float> w(rows * weights), v(rows * factors), v2(rows * factors);
  for (std::size_t i = 0; i < file.keys.size(); ++i) {
    const std::size_t key = file.keys[i];
    if (key >= rows) {
      return Status::Error("key " + std::to_string(key) + " lies outside the model's " +
                           std::to_string(space) + " features");
    }
    const float* slot = file.slots.data() + i * width;
    std::copy(slot, slot + weights, w.begin() + static_cast<std::ptrdiff_t>(key * weights));
    for (std::size_t f = 0; f < factors; ++f) {
      v[key * factors + f] = slot[1 + f];
      v2[key * factors + f] = slot[1 + f] * slot[1 + f];
    }
  }
  ::onnx::ModelProto model = NewModel(file.job_name, {kBatch, d});
  const std::string spec_text = sparse::FormatSparseModelSpec(file.spec);
  model.set_doc_string("dtrain sparse model " + spec_text + " as a dense model over " +
                       std::to_string(space) + " features");
  AddMetadata(model, "dtrain.spec", spec_text);
  AddMetadata(model, "dtrain.step", std::to_string(file.step));
  AddMetadata(model, "dtrain.hash_bits", std::to_string(file.hash_bits));
  ::onnx::GraphProto& proto = *model.mutable_graph();
  OnnxGraph graph(proto);
  std::string logits = graph.Node(
      "Gemm", {"input", graph.Constant(std::move(w), {d, static_cast<std::int64_t>(weights)}),
               graph.Constant(file.globals, {static_cast<std::int64_t>(file.globals.size())})});
  if (fm) {  // + 1/2 sum_f ((x V)_f^2 - (x^2 V^2)_f)
    const auto k = static_cast<std::int64_t>(factors);
    const std::string xv = graph.Node("MatMul", {"input", graph.Constant(std::move(v), {d, k})});
    const std::string squares = graph.Node(
        "MatMul", {graph.Node("Mul", {"input", "input"}), graph.Constant(std::move(v2), {d, k})});
    const std::string pairs = graph.Node("Sub", {graph.Node("Mul", {xv, xv}), squares});
    const std::string sum = graph.Node("ReduceSum", {pairs, graph.IntConstant({1}, {1})},
                                       {{"keepdims", std::int64_t{1}}});
    logits = graph.Node("Add", {logits, graph.Node("Mul", {sum, graph.Constant({0.5f}, {})})});
  }
  WriteOutputs(
      graph, proto, logits,
      outputs == 1 ? model::LossType::kBinaryCrossEntropy : model::LossType::kSoftmaxCrossEntropy,
      outputs);
  return Checked(model);
}

}  // namespace dtrain::onnx_export
