#include "core/model/model_summary.h"

#include <string>

#include "core/model/layer_type.h"

namespace dtrain::model {
namespace {

// "conv2d 32x3x3 relu", "maxpool 2", "dense 10": the layer's type and sizes.
std::string LayerWords(const LayerSpec& layer, int outputs) {
  const LayerType& type = LayerTypeOf(layer.kind);
  return type.summary != nullptr ? type.summary(layer, outputs) : LayerTypeName(layer);
}

}  // namespace

// Appended piece by piece: `" " + std::string(...)` trips GCC 12's -Wrestrict.
std::string SummaryActivation(math::Activation activation) {
  std::string word;
  if (activation != math::Activation::kIdentity)
    word.append(" ").append(ActivationName(activation));
  return word;
}

std::string SummarizeModel(const ModelSpec& spec) {
  const std::string loss = "loss=" + std::string(LossName(spec.loss));
  if (spec.type != ModelType::kSequential) {
    std::string out =
        std::string(ModelTypeName(spec.type)) + " inputs=" + std::to_string(spec.inputs);
    if (spec.type == ModelType::kMlp) {
      out += " hidden=";
      for (std::size_t i = 0; i < spec.hidden.size(); ++i) {
        out.append(i > 0 ? "," : "").append(std::to_string(spec.hidden[i]));
      }
      out.append(" activation=").append(ActivationName(spec.activation));
    }
    return out + " outputs=" + std::to_string(spec.outputs) + " " + loss;
  }
  const std::size_t n = spec.layers.size();
  std::string out = FormatShape(spec.input_shape);
  for (std::size_t i = 0; i < n; ++i) {
    // A long list: its first kSummaryLayers - 2 layers, then its last two.
    if (n > kSummaryLayers && i == kSummaryLayers - 2) {
      out += " > ... (" + std::to_string(n) + " layers)";
      i = n - 2;
    }
    out += " > " + LayerWords(spec.layers[i], spec.outputs);
  }
  return out + ", " + loss;
}

}  // namespace dtrain::model
