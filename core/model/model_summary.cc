#include "core/model/model_summary.h"

#include <cstdio>
#include <string>
#include <vector>

namespace dtrain::model {
namespace {

// " relu", or nothing for identity. Appended piece by piece: `" " + std::string(...)` trips
// GCC 12's -Wrestrict.
std::string ActivationWord(math::Activation activation) {
  std::string word;
  if (activation != math::Activation::kIdentity) word.append(" ").append(ActivationName(activation));
  return word;
}

// "conv2d 32x3x3 relu", "maxpool 2", "dense 10": the layer's type and sizes.
std::string LayerWords(const LayerSpec& layer, int outputs) {
  const std::string k = std::to_string(layer.kernel);
  switch (layer.kind) {
    case LayerKind::kConv2d: {
      std::string out = "conv2d " + std::to_string(layer.filters) + "x" + k + "x" + k;
      if (layer.stride > 1) out += " stride " + std::to_string(layer.stride);
      if (layer.padding == kSamePadding) out += " same";
      return out + ActivationWord(layer.activation);
    }
    case LayerKind::kMaxPool2d:
    case LayerKind::kAvgPool2d: {
      std::string out = (layer.kind == LayerKind::kMaxPool2d ? "maxpool " : "avgpool ") + k;
      if (layer.stride != layer.kernel) out += " stride " + std::to_string(layer.stride);
      return out;
    }
    case LayerKind::kDense:
      return "dense " + std::to_string(layer.units > 0 ? layer.units : outputs) +
             ActivationWord(layer.activation);
    case LayerKind::kDropout: {
      char rate[32];
      std::snprintf(rate, sizeof rate, "dropout %g", static_cast<double>(layer.rate));
      return rate;
    }
    case LayerKind::kBatchNorm:
    case LayerKind::kFlatten:
    case LayerKind::kActivation:
      break;
  }
  return LayerTypeName(layer);
}

}  // namespace

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
