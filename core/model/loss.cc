#include "core/model/loss.h"

#include <algorithm>
#include <cmath>

namespace dtrain::model {
namespace {

LossValue SoftmaxCrossEntropy(const float* logits, const float* labels, int rows, int cols,
                              float* grad) {
  LossValue v;
  const float inv_rows = 1.0f / static_cast<float>(rows);
  for (int r = 0; r < rows; ++r) {
    const float* z = logits + static_cast<std::size_t>(r) * cols;
    const int label = static_cast<int>(labels[r]);
    const float* top = std::max_element(z, z + cols);
    const float max = *top;
    double sum = 0.0;
    for (int c = 0; c < cols; ++c) sum += std::exp(static_cast<double>(z[c] - max));
    const double log_sum = std::log(sum);
    v.loss_sum += log_sum - static_cast<double>(z[label] - max);
    v.correct += (top - z) == label;
    if (grad != nullptr) {
      float* g = grad + static_cast<std::size_t>(r) * cols;
      for (int c = 0; c < cols; ++c) {
        const double p = std::exp(static_cast<double>(z[c] - max) - log_sum);
        g[c] = static_cast<float>(p - (c == label ? 1.0 : 0.0)) * inv_rows;
      }
    }
  }
  return v;
}

// Stable log(1 + exp(x)).
double Softplus(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

LossValue BinaryCrossEntropy(const float* logits, const float* labels, int rows, float* grad) {
  LossValue v;
  const float inv_rows = 1.0f / static_cast<float>(rows);
  for (int r = 0; r < rows; ++r) {
    const double z = logits[r];
    const double y = labels[r];
    // -[y log s(z) + (1-y) log(1-s(z))] = softplus(z) - y z
    v.loss_sum += Softplus(z) - y * z;
    v.correct += (z > 0) == (y > 0.5);
    if (grad != nullptr) {
      const double s = 1.0 / (1.0 + std::exp(-z));
      grad[r] = static_cast<float>(s - y) * inv_rows;
    }
  }
  return v;
}

LossValue MeanSquaredError(const float* outputs, const float* targets, int rows, float* grad) {
  LossValue v;
  const float inv_rows = 1.0f / static_cast<float>(rows);
  for (int r = 0; r < rows; ++r) {
    const double diff = static_cast<double>(outputs[r]) - targets[r];
    v.loss_sum += diff * diff;
    if (grad != nullptr) grad[r] = static_cast<float>(2.0 * diff) * inv_rows;
  }
  return v;
}

}  // namespace

LossValue ComputeLoss(LossType type, const float* outputs, const float* labels, int rows, int cols,
                      float* grad) {
  switch (type) {
    case LossType::kSoftmaxCrossEntropy:
      return SoftmaxCrossEntropy(outputs, labels, rows, cols, grad);
    case LossType::kBinaryCrossEntropy:
      return BinaryCrossEntropy(outputs, labels, rows, grad);
    case LossType::kMeanSquaredError:
      return MeanSquaredError(outputs, labels, rows, grad);
  }
  return {};
}

}  // namespace dtrain::model
