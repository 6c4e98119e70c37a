#include "core/sparse/sparse_inference.h"

#include "core/sparse/sparse_trainer.h"

namespace dtrain::sparse {
namespace {

constexpr std::size_t kChunkRows = 4096;

}  // namespace

Result<train::InferenceResult> RunSparseInference(const SparseModelFile& file,
                                                  const data::SparseRows& rows) {
  const SparseModel model(file.spec);
  KeyTable table(model, {}, 0);  // sgd: no optimizer state to hold
  if (Status restored = table.Restore({file.keys, file.slots, {}, file.globals}); !restored.ok()) {
    return restored;
  }
  LocalSparseParameters params(table);
  Result<std::vector<float>> scores = ScoreRows(model, params, rows, kChunkRows);
  if (!scores.ok()) return scores.status();
  const SparseEvalResult measured = MeasureScores(model, scores.value(), rows.labels);
  train::InferenceResult out;
  out.loss = measured.loss;
  out.accuracy = measured.accuracy;
  out.auc = measured.auc;
  out.labels = rows.labels;
  const auto outputs = static_cast<std::size_t>(model.Outputs());
  // One output: a logistic (click) model; several: softmax.
  const model::LossType loss = outputs == 1 ? model::LossType::kBinaryCrossEntropy
                                            : model::LossType::kSoftmaxCrossEntropy;
  out.predictions.reserve(rows.rows());
  for (std::size_t r = 0; r < rows.rows(); ++r) {
    train::AppendPrediction({scores.value().data() + r * outputs, outputs}, loss, &out);
  }
  return out;
}

}  // namespace dtrain::sparse
