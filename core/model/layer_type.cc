// The layer types looked up by kind and by name: MakeLayer and the type names of layer_spec.h.
#include "core/model/layer_type.h"

#include <cstdlib>
#include <string>

#include "core/model/spec.h"

namespace dtrain::model {
namespace {

// "conv2d, maxpool2d, ..., relu, tanh, sigmoid": every spelling, in the types' order.
std::string JoinSpellings() {
  std::string choices;
  for (const LayerType* type : LayerTypes()) {
    for (const LayerSpelling& spelling : type->spellings) {
      choices.append(choices.empty() ? "" : ", ").append(spelling.name);
    }
  }
  return choices;
}

}  // namespace

const LayerType& LayerTypeOf(LayerKind kind) {
  for (const LayerType* type : LayerTypes()) {
    if (type->kind == kind) return *type;
  }
  std::abort();  // a kind missing from layers/layer_types.cc: a programming error
}

Result<std::unique_ptr<Layer>> MakeLayer(const LayerSpec& spec, Shape input, int outputs) {
  return LayerTypeOf(spec.kind).make(spec, input, outputs);
}

std::string LayerTypeName(const LayerSpec& layer) {
  const LayerType& type = LayerTypeOf(layer.kind);
  if (type.named_by_activation) return std::string(ActivationName(layer.activation));
  return std::string(type.spellings.front().name);
}

Result<LayerSpec> LayerOfType(std::string_view name) {
  for (const LayerType* type : LayerTypes()) {
    for (const LayerSpelling& spelling : type->spellings) {
      if (spelling.name == name) return spelling.start;
    }
  }
  return Status::Error("layer type must be one of " + std::string(LayerTypeChoices()) + ", got '" +
                       std::string(name) + "'");
}

std::string_view LayerTypeChoices() {
  static const std::string choices = JoinSpellings();
  return choices;
}

}  // namespace dtrain::model
