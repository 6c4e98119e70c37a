// ModelSpec: the small, serialisable description from which any dtrain model is rebuilt.
//
//   ModelSpec s{.type = ModelType::kMlp, .inputs = 784, .hidden = {256, 128}, .outputs = 10};
//   std::string text = FormatModelSpec(s);   // "mlp inputs=784 hidden=256,128 activation=relu ..."
//   Result<ModelSpec> back = ParseModelSpec(text);
//
// The text form is one line of `key=value` words after the type; it is what checkpoints, model
// files and rendezvous messages carry, so two processes agree on a model by comparing it.
// Plain value type.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/math/elementwise.h"
#include "core/status.h"

namespace dtrain::model {

enum class ModelType { kLinear, kLogistic, kSoftmax, kMlp };
enum class LossType { kSoftmaxCrossEntropy, kBinaryCrossEntropy, kMeanSquaredError };
enum class InitScheme { kAuto, kXavier, kHe };

struct ModelSpec {
  ModelType type = ModelType::kSoftmax;
  int inputs = 0;
  std::vector<int> hidden;  // only for kMlp
  math::Activation activation = math::Activation::kRelu;  // of the hidden layers
  int outputs = 1;
  LossType loss = LossType::kSoftmaxCrossEntropy;
  InitScheme init = InitScheme::kAuto;  // kAuto: He for relu, Xavier otherwise

  bool operator==(const ModelSpec&) const = default;
};

// The natural loss and output count of a model type ("linear" → MSE with 1 output, ...).
LossType DefaultLoss(ModelType type, int outputs);

// Checks sizes and that type, loss and outputs fit together. The message names the field.
Status ValidateModelSpec(const ModelSpec& spec);

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

// The allowed names, joined for error messages: "linear, logistic, softmax, mlp".
std::string_view ModelTypeChoices();
std::string_view ActivationChoices();
std::string_view LossChoices();
std::string_view InitChoices();

}  // namespace dtrain::model
