// The area under the ROC curve of scores for binary labels: the probability that a random
// positive row scores above a random negative one, ties counting one half — what users of
// click-prediction models read beside log loss.
//
//   double auc = Auc(scores, labels);   // labels 0/1; NaN when either class is absent or a
//                                       // score is NaN (a diverged model's)
//
// Exact: O(n log n) by ranking the scores (ties take their average rank). Pure function.
#pragma once

#include <span>

namespace dtrain::train {

double Auc(std::span<const float> scores, std::span<const float> labels);

}  // namespace dtrain::train
