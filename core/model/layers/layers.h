// The layer types' constructors, one per file in this folder; MakeLayer (make_layer.cc) picks
// by LayerKind. Each checks that the layer fits its input shape and says why not.
#pragma once

#include <memory>

#include "core/model/layer.h"

namespace dtrain::model::layers {

Result<std::unique_ptr<Layer>> MakeDense(const LayerSpec& spec, Shape input, int outputs);
Result<std::unique_ptr<Layer>> MakeConv2d(const LayerSpec& spec, Shape input);
Result<std::unique_ptr<Layer>> MakePool2d(const LayerSpec& spec, Shape input);
Result<std::unique_ptr<Layer>> MakeFlatten(Shape input);
Result<std::unique_ptr<Layer>> MakeDropout(const LayerSpec& spec, Shape input);
Result<std::unique_ptr<Layer>> MakeBatchNorm(const LayerSpec& spec, Shape input);
Result<std::unique_ptr<Layer>> MakeActivation(const LayerSpec& spec, Shape input);

}  // namespace dtrain::model::layers
