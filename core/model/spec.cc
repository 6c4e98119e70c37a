#include "core/model/spec.h"

#include <algorithm>
#include <array>
#include <optional>
#include <sstream>
#include <utility>

#include "core/model/layer_type.h"
#include "core/model/spec_text.h"
#include "core/name_table.h"

namespace dtrain::model {
namespace {

constexpr NameTable<ModelType, 5> kModelTypes{{{{ModelType::kLinear, "linear"},
                                                {ModelType::kLogistic, "logistic"},
                                                {ModelType::kSoftmax, "softmax"},
                                                {ModelType::kMlp, "mlp"},
                                                {ModelType::kSequential, "sequential"}}},
                                              "linear, logistic, softmax, mlp, sequential"};
constexpr NameTable<math::Activation, 4> kActivations{{{{math::Activation::kRelu, "relu"},
                                                        {math::Activation::kTanh, "tanh"},
                                                        {math::Activation::kSigmoid, "sigmoid"},
                                                        {math::Activation::kIdentity, "identity"}}},
                                                      "relu, tanh, sigmoid, identity"};
constexpr NameTable<LossType, 3> kLosses{{{{LossType::kSoftmaxCrossEntropy, "softmax_xent"},
                                           {LossType::kBinaryCrossEntropy, "bce"},
                                           {LossType::kMeanSquaredError, "mse"}}},
                                         "softmax_xent, bce, mse"};
constexpr NameTable<InitScheme, 3> kInits{
    {{{InitScheme::kAuto, "auto"}, {InitScheme::kXavier, "xavier"}, {InitScheme::kHe, "he"}}},
    "auto, xavier, he"};

// The last layer's output shape; the chain must hold (FindLayerMisfit).
Shape OutputShape(const ModelSpec& spec) {
  Shape shape = spec.input_shape;
  for (const LayerSpec& layer : spec.layers) {
    shape = MakeLayer(layer, shape, spec.outputs).value()->output();
  }
  return shape;
}

// A sequential model's layers chain from input_shape to `outputs` flat values; other types have
// no layer list.
Status ValidateLayers(const ModelSpec& spec) {
  if (spec.type != ModelType::kSequential) {
    if (!spec.layers.empty())
      return Status::Error("model: layers are only allowed for type 'sequential'");
    return Status::Ok();
  }
  if (spec.layers.empty()) return Status::Error("model: 'sequential' needs at least one layer");
  if (spec.input_shape.Size() != static_cast<std::size_t>(spec.inputs) ||
      spec.input_shape.channels < 1 || spec.input_shape.height < 1 || spec.input_shape.width < 1) {
    return Status::Error("model: input_shape " + FormatShape(spec.input_shape) + " does not hold " +
                         std::to_string(spec.inputs) + " inputs");
  }
  if (std::optional<LayerMisfit> misfit = FindLayerMisfit(spec)) {
    return Status::Error("model: layer " + std::to_string(misfit->index + 1) + ": " +
                         misfit->reason);
  }
  const Shape last = OutputShape(spec);
  if (last.Size() != static_cast<std::size_t>(spec.outputs)) {
    return Status::Error("model: the last layer gives " + FormatShape(last) +
                         " values per sample, but the model has " + std::to_string(spec.outputs) +
                         " outputs: end with a dense layer of " + std::to_string(spec.outputs) +
                         " units");
  }
  return Status::Ok();
}

}  // namespace

std::optional<LayerMisfit> FindLayerMisfit(const ModelSpec& spec) {
  Shape shape = spec.input_shape;
  const int outputs = std::max(spec.outputs, 1);
  for (std::size_t i = 0; i < spec.layers.size(); ++i) {
    const std::string name = LayerTypeName(spec.layers[i]);
    const std::string on = name + " on " + FormatShape(shape) + " (the output of " +
                           (i == 0 ? std::string("input_shape") : "layer " + std::to_string(i)) +
                           ")";
    Result<std::unique_ptr<Layer>> layer = MakeLayer(spec.layers[i], shape, outputs);
    if (!layer.ok()) return LayerMisfit{i, on + ": " + layer.status().message()};
    shape = layer.value()->output();
    if (shape.Size() > static_cast<std::size_t>(kMaxLayerWidth)) {
      return LayerMisfit{i, on + " gives " + FormatShape(shape) + " values per sample, more than " +
                                std::to_string(kMaxLayerWidth)};
    }
  }
  if (!shape.Flat()) {
    return LayerMisfit{spec.layers.size() - 1,
                       "the last layer gives " + FormatShape(shape) +
                           " values per sample; end with a dense layer that gives the model's "
                           "outputs"};
  }
  return std::nullopt;
}

std::vector<LayerSpec> ModelLayers(const ModelSpec& spec) {
  if (spec.type == ModelType::kSequential) return spec.layers;
  std::vector<LayerSpec> layers;
  for (int width : spec.hidden) {
    layers.push_back({.kind = LayerKind::kDense, .units = width, .activation = spec.activation});
  }
  layers.push_back({.kind = LayerKind::kDense, .units = spec.outputs});
  return layers;
}

Shape ModelInputShape(const ModelSpec& spec) {
  if (spec.type == ModelType::kSequential) return spec.input_shape;
  return Shape{spec.inputs, 1, 1};
}

std::string_view ModelTypeName(ModelType type) { return kModelTypes.Name(type); }
std::string_view ActivationName(math::Activation act) { return kActivations.Name(act); }
std::string_view LossName(LossType loss) { return kLosses.Name(loss); }
std::string_view InitName(InitScheme init) { return kInits.Name(init); }
Result<ModelType> ParseModelType(std::string_view n) { return kModelTypes.Parse(n, "model type"); }
Result<math::Activation> ParseActivation(std::string_view n) {
  return kActivations.Parse(n, "activation");
}
Result<LossType> ParseLoss(std::string_view n) { return kLosses.Parse(n, "loss"); }
Result<InitScheme> ParseInit(std::string_view n) { return kInits.Parse(n, "init"); }
std::string_view ModelTypeChoices() { return kModelTypes.choices; }
std::string_view ActivationChoices() { return kActivations.choices; }
std::string_view LossChoices() { return kLosses.choices; }
std::string_view InitChoices() { return kInits.choices; }

LossType DefaultLoss(ModelType type, int outputs) {
  switch (type) {
    case ModelType::kLinear:
      return LossType::kMeanSquaredError;
    case ModelType::kLogistic:
      return LossType::kBinaryCrossEntropy;
    case ModelType::kSoftmax:
      return LossType::kSoftmaxCrossEntropy;
    case ModelType::kMlp:
    case ModelType::kSequential:
      return outputs == 1 ? LossType::kMeanSquaredError : LossType::kSoftmaxCrossEntropy;
  }
  return LossType::kSoftmaxCrossEntropy;
}

Status ValidateModelSpec(const ModelSpec& spec) {
  auto width_ok = [](long w) { return w >= 1 && w <= kMaxLayerWidth; };
  if (!width_ok(spec.inputs)) {
    return Status::Error("model: inputs must be in [1, " + std::to_string(kMaxLayerWidth) +
                         "], got " + std::to_string(spec.inputs));
  }
  if (!width_ok(spec.outputs)) {
    return Status::Error("model: outputs must be in [1, " + std::to_string(kMaxLayerWidth) +
                         "], got " + std::to_string(spec.outputs));
  }
  if (spec.type != ModelType::kMlp && !spec.hidden.empty()) {
    return Status::Error("model: hidden layers are only allowed for type 'mlp'");
  }
  for (int h : spec.hidden) {
    if (!width_ok(h)) {
      return Status::Error("model: every hidden size must be in [1, " +
                           std::to_string(kMaxLayerWidth) + "], got " + std::to_string(h));
    }
  }
  if (spec.type == ModelType::kLogistic && spec.outputs != 1) {
    return Status::Error("model: 'logistic' has exactly 1 output, got " +
                         std::to_string(spec.outputs));
  }
  if (spec.type == ModelType::kSoftmax && spec.outputs < 2) {
    return Status::Error("model: 'softmax' needs at least 2 outputs (classes)");
  }
  if (Status layers = ValidateLayers(spec); !layers.ok()) return layers;
  switch (spec.loss) {
    case LossType::kSoftmaxCrossEntropy:
      if (spec.outputs < 2) return Status::Error("model: loss 'softmax_xent' needs >= 2 outputs");
      break;
    case LossType::kBinaryCrossEntropy:
    case LossType::kMeanSquaredError:
      if (spec.outputs != 1) {
        return Status::Error("model: loss '" + std::string(LossName(spec.loss)) +
                             "' needs exactly 1 output, got " + std::to_string(spec.outputs));
      }
      break;
  }
  return Status::Ok();
}

std::string FormatModelSpec(const ModelSpec& spec) {
  std::ostringstream out;
  if (spec.type == ModelType::kSequential) {
    out << ModelTypeName(spec.type) << " inputs=" << spec.inputs << " outputs=" << spec.outputs
        << " shape=" << FormatShape(spec.input_shape) << " loss=" << LossName(spec.loss)
        << " init=" << InitName(spec.init);
    for (const LayerSpec& layer : spec.layers) out << " layer=" << FormatLayerSpec(layer);
    return out.str();
  }
  out << ModelTypeName(spec.type) << " inputs=" << spec.inputs << " hidden=";
  for (std::size_t i = 0; i < spec.hidden.size(); ++i) out << (i ? "," : "") << spec.hidden[i];
  out << " activation=" << ActivationName(spec.activation) << " outputs=" << spec.outputs
      << " loss=" << LossName(spec.loss) << " init=" << InitName(spec.init);
  return out.str();
}

Result<ModelSpec> ParseModelSpec(std::string_view text) {
  std::istringstream in{std::string(text)};
  std::string word;
  if (!(in >> word)) return Status::Error("model spec: empty");
  auto type = ParseModelType(word);
  if (!type.ok()) return type.status();
  ModelSpec spec;
  spec.type = type.value();
  spec.loss = LossType::kSoftmaxCrossEntropy;
  bool loss_given = false;
  while (in >> word) {
    auto eq = word.find('=');
    if (eq == std::string::npos)
      return Status::Error("model spec: expected key=value, got " + word);
    std::string_view key = std::string_view(word).substr(0, eq);
    std::string_view value = std::string_view(word).substr(eq + 1);
    if (key == "inputs" || key == "outputs") {
      auto v = ParseSpecNumber<int>(value, key);
      if (!v.ok()) return v.status();
      (key == "inputs" ? spec.inputs : spec.outputs) = v.value();
    } else if (key == "hidden") {
      spec.hidden.clear();
      while (!value.empty()) {
        auto comma = value.find(',');
        auto v = ParseSpecNumber<int>(value.substr(0, comma), key);
        if (!v.ok()) return v.status();
        spec.hidden.push_back(v.value());
        value = comma == std::string_view::npos ? std::string_view() : value.substr(comma + 1);
      }
    } else if (key == "activation") {
      auto a = ParseActivation(value);
      if (!a.ok()) return a.status();
      spec.activation = a.value();
    } else if (key == "loss") {
      auto l = ParseLoss(value);
      if (!l.ok()) return l.status();
      spec.loss = l.value();
      loss_given = true;
    } else if (key == "shape") {
      auto shape = ParseShape(value);
      if (!shape.ok()) return shape.status();
      spec.input_shape = shape.value();
    } else if (key == "layer") {
      auto layer = ParseLayerSpec(value);
      if (!layer.ok()) return layer.status();
      spec.layers.push_back(layer.value());
    } else if (key == "init") {
      auto i = ParseInit(value);
      if (!i.ok()) return i.status();
      spec.init = i.value();
    } else {
      return Status::Error("model spec: unknown key '" + std::string(key) + "'");
    }
  }
  if (!loss_given) spec.loss = DefaultLoss(spec.type, spec.outputs);
  Status valid = ValidateModelSpec(spec);
  if (!valid.ok()) return valid;
  return spec;
}

}  // namespace dtrain::model
