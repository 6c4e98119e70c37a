// ModelSpec: the small, serialisable description from which any dtrain model is rebuilt.
//
//   ModelSpec s{.type = ModelType::kMlp, .inputs = 784, .hidden = {256, 128}, .outputs = 10};
//   std::string text = FormatModelSpec(s);   // "mlp inputs=784 hidden=256,128 activation=relu ..."
//   Result<ModelSpec> back = ParseModelSpec(text);
//
// A "sequential" model is a list of layers (core/model/layer_spec.h) on samples of input_shape:
//   "sequential inputs=784 outputs=10 shape=1x28x28 loss=softmax_xent init=auto
//    layer=conv2d,filters=32,... layer=maxpool2d,size=2,stride=2 layer=dense,units=10,..."
// The other types are shorthands for chains of dense layers (ModelLayers).
//
// The text form is one line of `key=value` words after the type; it is what checkpoints, model
// files and rendezvous messages carry, so two processes agree on a model by comparing it.
// Plain value type.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/math/elementwise.h"
#include "core/model/layer_spec.h"
#include "core/status.h"

namespace dtrain::model {

enum class ModelType { kLinear, kLogistic, kSoftmax, kMlp, kSequential };
enum class LossType { kSoftmaxCrossEntropy, kBinaryCrossEntropy, kMeanSquaredError };
enum class InitScheme { kAuto, kXavier, kHe };

struct ModelSpec {
  ModelType type = ModelType::kSoftmax;
  int inputs = 0;
  std::vector<int> hidden;                                // only for kMlp
  math::Activation activation = math::Activation::kRelu;  // of the hidden layers
  int outputs = 1;
  LossType loss = LossType::kSoftmaxCrossEntropy;
  InitScheme init = InitScheme::kAuto;  // kAuto: He for relu, Xavier otherwise
  // kSequential only: each sample's shape (0x0x0 until known: from the data) and the layers.
  Shape input_shape{0, 0, 0};
  std::vector<LayerSpec> layers;

  bool operator==(const ModelSpec&) const = default;
};

// The natural loss and output count of a model type ("linear" → MSE with 1 output, ...).
LossType DefaultLoss(ModelType type, int outputs);

// Checks sizes and that type, loss and outputs fit together, and that a layer list chains from
// input_shape to `outputs` values. The message names the field, or the layer (counted from 1).
Status ValidateModelSpec(const ModelSpec& spec);

// A layer of a layer list that does not fit its input: which (from 0) and why, worded for the
// user ("conv2d on 4x3x3 (the output of layer 2): kernel 5 is larger than ...").
struct LayerMisfit {
  std::size_t index = 0;
  std::string reason;
};
// The first layer of spec.layers that does not fit the output of the one before it (the first:
// spec.input_shape), gives too many values, or, being the last, does not give a flat vector;
// dense units left 0 stand for spec.outputs (1 while unknown). nullopt when the chain holds.
std::optional<LayerMisfit> FindLayerMisfit(const ModelSpec& spec);

// The model's layers first to last: a sequential model's own, or the dense layers a shorthand
// type stands for (hidden layers with `activation`, then the output layer).
std::vector<LayerSpec> ModelLayers(const ModelSpec& spec);
// A sample's shape at the model's input: input_shape, or `inputs` values in a row.
Shape ModelInputShape(const ModelSpec& spec);

std::string FormatModelSpec(const ModelSpec& spec);
Result<ModelSpec> ParseModelSpec(std::string_view text);

// Names used in job files, model specs and messages ("mlp", "relu", "softmax_xent", ...).
std::string_view ModelTypeName(ModelType type);
std::string_view ActivationName(math::Activation act);
std::string_view LossName(LossType loss);
std::string_view InitName(InitScheme init);
Result<ModelType> ParseModelType(std::string_view name);
Result<math::Activation> ParseActivation(std::string_view name);
Result<LossType> ParseLoss(std::string_view name);
Result<InitScheme> ParseInit(std::string_view name);

// The allowed names, joined for error messages: "linear, logistic, softmax, mlp, sequential".
std::string_view ModelTypeChoices();
std::string_view ActivationChoices();
std::string_view LossChoices();
std::string_view InitChoices();

}  // namespace dtrain::model
