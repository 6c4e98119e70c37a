#include "core/model/layers/layers.h"

namespace dtrain::model {

Result<std::unique_ptr<Layer>> MakeLayer(const LayerSpec& spec, Shape input, int outputs) {
  switch (spec.kind) {
    case LayerKind::kDense:
      return layers::MakeDense(spec, input, outputs);
    case LayerKind::kConv2d:
      return layers::MakeConv2d(spec, input);
    case LayerKind::kMaxPool2d:
    case LayerKind::kAvgPool2d:
      return layers::MakePool2d(spec, input);
    case LayerKind::kFlatten:
      return layers::MakeFlatten(input);
    case LayerKind::kDropout:
      return layers::MakeDropout(spec, input);
    case LayerKind::kBatchNorm:
      return layers::MakeBatchNorm(spec, input);
    case LayerKind::kActivation:
      return layers::MakeActivation(spec, input);
  }
  return Status::Error("unknown layer kind");
}

}  // namespace dtrain::model
