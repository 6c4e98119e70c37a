#include "core/train/inference.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/model/model.h"

namespace dtrain::train {

void AppendPrediction(std::span<const float> outputs, model::LossType loss,
                      InferenceResult* result) {
  switch (loss) {
    case model::LossType::kSoftmaxCrossEntropy: {
      const auto largest = std::max_element(outputs.begin(), outputs.end());
      result->predictions.push_back(static_cast<float>(largest - outputs.begin()));
      // Shifted by the largest output, so that exp cannot overflow.
      double sum = 0.0;
      for (float v : outputs) sum += std::exp(static_cast<double>(v) - *largest);
      for (float v : outputs) {
        result->probabilities.push_back(
            static_cast<float>(std::exp(static_cast<double>(v) - *largest) / sum));
      }
      result->proba_columns = static_cast<int>(outputs.size());
      break;
    }
    case model::LossType::kBinaryCrossEntropy:
      result->predictions.push_back(outputs[0] > 0.0f ? 1.0f : 0.0f);
      result->probabilities.push_back(
          static_cast<float>(1.0 / (1.0 + std::exp(-static_cast<double>(outputs[0])))));
      result->proba_columns = 1;
      break;
    case model::LossType::kMeanSquaredError:
      result->predictions.push_back(outputs[0]);
      break;
  }
}

Result<InferenceResult> RunInference(const ModelFile& file, const data::Dataset& set) {
  return RunInference(file.spec, file.scaling, {file.params.data(), file.params.size()}, set, 1000);
}

Result<InferenceResult> RunInference(const model::ModelSpec& spec, const data::Scaling& scaling,
                                     std::span<const float> params, const data::Dataset& set,
                                     int chunk_rows) {
  if (set.features != static_cast<std::size_t>(spec.inputs)) {
    return Status::Error(set.source + " has " + std::to_string(set.features) +
                         " features, the model takes " + std::to_string(spec.inputs));
  }
  // Images of several channels are read as height, width, channel: a model that takes images
  // must take these (a flat input takes the rows as they are).
  const model::Shape in = model::ModelInputShape(spec);
  const model::Shape image{static_cast<int>(set.image_channels), static_cast<int>(set.image_height),
                           static_cast<int>(set.image_width)};
  if (set.image_channels > 1 && !in.Flat() && in != image) {
    return Status::Error(set.source + " holds images of " + model::FormatShape(image) +
                         " (channels x height x width), the model takes " + model::FormatShape(in));
  }
  model::Model model(spec);
  const int chunk = std::max(chunk_rows, 1);
  model::Workspace ws(model, chunk);
  math::FloatBuffer x(static_cast<std::size_t>(chunk) * set.features);
  std::vector<float> y(static_cast<std::size_t>(chunk));
  std::vector<std::uint32_t> indices(static_cast<std::size_t>(chunk));

  InferenceResult result;
  result.classification = spec.loss != model::LossType::kMeanSquaredError;
  result.predictions.reserve(set.rows);
  result.labels.assign(set.labels.begin(), set.labels.end());
  if (result.classification) {
    result.probabilities.reserve(set.rows * static_cast<std::size_t>(
                                                spec.loss == model::LossType::kBinaryCrossEntropy
                                                    ? 1
                                                    : spec.outputs));
  }
  double loss_sum = 0.0;
  long correct = 0;
  for (std::size_t begin = 0; begin < set.rows; begin += static_cast<std::size_t>(chunk)) {
    const std::size_t rows =
        std::min<std::size_t>(static_cast<std::size_t>(chunk), set.rows - begin);
    std::iota(indices.begin(), indices.begin() + static_cast<long>(rows),
              static_cast<std::uint32_t>(begin));
    data::GatherBatch(set, scaling, {indices.data(), rows}, x.data(), y.data());
    const float* out = model.Forward(params.data(), x.data(), static_cast<int>(rows), ws);
    const model::LossValue v =
        model::ComputeLoss(spec.loss, out, y.data(), static_cast<int>(rows), spec.outputs, nullptr);
    loss_sum += v.loss_sum;
    correct += v.correct;
    const auto outputs = static_cast<std::size_t>(spec.outputs);
    for (std::size_t r = 0; r < rows; ++r) {
      AppendPrediction({out + r * outputs, outputs}, spec.loss, &result);
    }
  }
  if (set.rows > 0) {
    result.loss = loss_sum / static_cast<double>(set.rows);
    result.accuracy = static_cast<double>(correct) / static_cast<double>(set.rows);
  }
  return result;
}

}  // namespace dtrain::train
