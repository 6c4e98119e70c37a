#include "core/train/inference.h"

#include <algorithm>
#include <numeric>

#include "core/model/model.h"

namespace dtrain::train {

Result<InferenceResult> RunInference(const ModelFile& file, const data::Dataset& set) {
  const model::ModelSpec& spec = file.spec;
  if (set.features != static_cast<std::size_t>(spec.inputs)) {
    return Status::Error(set.source + " has " + std::to_string(set.features) +
                         " features, the model takes " + std::to_string(spec.inputs));
  }
  model::Model model(spec);
  constexpr int kChunk = 1000;
  model::Workspace ws(model, kChunk);
  math::FloatBuffer x(static_cast<std::size_t>(kChunk) * set.features);
  std::vector<float> y(kChunk);
  std::vector<std::uint32_t> indices(kChunk);

  InferenceResult result;
  result.classification = spec.loss != model::LossType::kMeanSquaredError;
  result.predictions.reserve(set.rows);
  double loss_sum = 0.0;
  long correct = 0;
  for (std::size_t begin = 0; begin < set.rows; begin += kChunk) {
    const std::size_t rows = std::min<std::size_t>(kChunk, set.rows - begin);
    std::iota(indices.begin(), indices.begin() + static_cast<long>(rows),
              static_cast<std::uint32_t>(begin));
    data::GatherBatch(set, file.scaling, {indices.data(), rows}, x.data(), y.data());
    const float* out = model.Forward(file.params.data(), x.data(), static_cast<int>(rows), ws);
    const model::LossValue v =
        model::ComputeLoss(spec.loss, out, y.data(), static_cast<int>(rows), spec.outputs, nullptr);
    loss_sum += v.loss_sum;
    correct += v.correct;
    for (std::size_t r = 0; r < rows; ++r) {
      const float* row = out + r * static_cast<std::size_t>(spec.outputs);
      switch (spec.loss) {
        case model::LossType::kSoftmaxCrossEntropy:
          result.predictions.push_back(
              static_cast<float>(std::max_element(row, row + spec.outputs) - row));
          break;
        case model::LossType::kBinaryCrossEntropy:
          result.predictions.push_back(row[0] > 0.0f ? 1.0f : 0.0f);
          break;
        case model::LossType::kMeanSquaredError:
          result.predictions.push_back(row[0]);
          break;
      }
    }
  }
  if (set.rows > 0) {
    result.loss = loss_sum / static_cast<double>(set.rows);
    result.accuracy = static_cast<double>(correct) / static_cast<double>(set.rows);
  }
  return result;
}

}  // namespace dtrain::train
