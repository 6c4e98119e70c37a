// Running a saved model (ModelFile) over a data set: predictions, and loss/accuracy against the
// set's labels — what `dtrain predict` and `dtrain eval` print.
//
//   Result<InferenceResult> r = RunInference(model_file, test_set);
//   // r.value().predictions[i]: class index (classification) or predicted value (regression)
//
// Scales features with the model file's own scaling, exactly as in training. Pure function;
// safe for concurrent use.
#pragma once

#include <cstddef>
#include <limits>
#include <vector>

#include "core/data/dataset.h"
#include "core/status.h"
#include "core/train/model_file.h"

namespace dtrain::train {

struct InferenceResult {
  std::vector<float> predictions;
  double loss = 0.0;      // mean loss (mse for regression)
  double accuracy = 0.0;  // classification only
  bool classification = true;
  double auc = std::numeric_limits<double>::quiet_NaN();  // binary sparse models only
};

// An error when the set's feature count differs from the model's inputs.
Result<InferenceResult> RunInference(const ModelFile& model, const data::Dataset& set);

}  // namespace dtrain::train
