// Losses over a batch of model outputs, with their gradient with respect to those outputs.
//
//   LossValue v = ComputeLoss(LossType::kSoftmaxCrossEntropy, logits, labels, rows, 10, dlogits);
//   double mean_loss = v.loss_sum / rows;
//
// Labels are one float per row: the class index for softmax_xent, 0/1 for bce, the target for
// mse (one output). `grad`, when not null, receives d(mean loss)/d(outputs) — already divided by
// `rows`. softmax_xent and bce take raw logits and are numerically stable for any finite input.
// Pure functions: safe for concurrent use on disjoint memory.
#pragma once

#include "core/model/spec.h"

namespace dtrain::model {

struct LossValue {
  double loss_sum = 0.0;  // summed over rows (divide by rows for the mean)
  long correct = 0;       // rows classified correctly (always 0 for mse)
};

LossValue ComputeLoss(LossType type, const float* outputs, const float* labels, int rows, int cols,
                      float* grad);

}  // namespace dtrain::model
