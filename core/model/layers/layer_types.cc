// The list of every layer type: each is defined in its own file of this folder. A new layer
// type adds its line to both lists below (and its kind, with any new fields, to layer_spec.h).
// The order is the one job-file messages list the types' names in.
#include "core/model/layer_type.h"

namespace dtrain::model {
namespace layers {

extern const LayerType kConv2dLayer;
extern const LayerType kMaxPool2dLayer;
extern const LayerType kAvgPool2dLayer;
extern const LayerType kFlattenLayer;
extern const LayerType kDenseLayer;
extern const LayerType kDropoutLayer;
extern const LayerType kBatchNormLayer;
extern const LayerType kActivationLayer;

}  // namespace layers

std::span<const LayerType* const> LayerTypes() {
  static constexpr const LayerType* kTypes[] = {
      &layers::kConv2dLayer,    &layers::kMaxPool2dLayer, &layers::kAvgPool2dLayer,
      &layers::kFlattenLayer,   &layers::kDenseLayer,     &layers::kDropoutLayer,
      &layers::kBatchNormLayer, &layers::kActivationLayer};
  return kTypes;
}

}  // namespace dtrain::model
