// SummarizeModel: a model in a few words for people (the "training:" line of dtrain run and of
// a job's log), apart from FormatModelSpec's text, which checkpoints and model files store and
// must stay as it is.
//
//   SummarizeModel(mlp);  // "mlp inputs=784 hidden=256,128 activation=relu outputs=10 loss=..."
//   SummarizeModel(cnn);  // "1x28x28 > conv2d 32x3x3 relu > maxpool 2 > dense 10, loss=..."
//
// Linear, logistic and softmax models name no hidden layers or activation; a layer list names
// each layer with its sizes, a last dense layer with the model's outputs. At most kSummaryLayers
// layers are named: a longer list shows its first and last ones around "... (N layers) ...".
// Pure function.
#pragma once

#include <cstddef>
#include <string>

#include "core/model/spec.h"

namespace dtrain::model {

inline constexpr std::size_t kSummaryLayers = 8;

std::string SummarizeModel(const ModelSpec& spec);

}  // namespace dtrain::model
