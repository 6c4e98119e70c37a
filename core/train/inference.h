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
#include <span>
#include <vector>

#include "core/data/dataset.h"
#include "core/model/spec.h"
#include "core/status.h"
#include "core/train/model_file.h"

namespace dtrain::train {

struct InferenceResult {
  std::vector<float> predictions;
  // Classification: each row's class probabilities, row after row, proba_columns a row: one per
  // class (softmax), or the positive class's alone (one output: logistic, click models).
  // Regression: none (proba_columns 0).
  std::vector<float> probabilities;
  int proba_columns = 0;
  // The set's labels, one per row (what eval compares with; rows read without labels give 0s).
  std::vector<float> labels;
  double loss = 0.0;      // mean loss (mse for regression)
  double accuracy = 0.0;  // classification only
  bool classification = true;
  double auc = std::numeric_limits<double>::quiet_NaN();  // binary sparse models only
};

// An error when the set's feature count differs from the model's inputs.
Result<InferenceResult> RunInference(const ModelFile& model, const data::Dataset& set);
// The same for a model of `spec` whose parameters are `params` (Model(spec).NumParams() floats,
// a trainer's), scaling features by `scaling`, `chunk_rows` rows a forward pass.
Result<InferenceResult> RunInference(const model::ModelSpec& spec, const data::Scaling& scaling,
                                     std::span<const float> params, const data::Dataset& set,
                                     int chunk_rows);

// Appends one row's prediction and probabilities to *result, from the model's raw outputs for it
// (logits; `loss` says how to read them): the class with the largest output and the softmax of
// the outputs; one output of binary cross-entropy: its sigmoid, class 1 when above one half; mean
// squared error: the value itself.
void AppendPrediction(std::span<const float> outputs, model::LossType loss,
                      InferenceResult* result);

}  // namespace dtrain::train
