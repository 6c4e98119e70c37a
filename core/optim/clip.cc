#include "core/optim/clip.h"

#include <cmath>

#include "core/math/elementwise.h"

namespace dtrain::optim {

double GlobalNorm(std::span<const float> grad) { return std::sqrt(math::SquaredNorm(grad)); }

double ClipByGlobalNorm(std::span<float> grad, float max_norm) {
  const double norm = GlobalNorm(grad);
  if (max_norm > 0.0f && std::isfinite(norm) && norm > max_norm) {
    math::Scale(static_cast<float>(max_norm / norm), grad);
  }
  return norm;
}

}  // namespace dtrain::optim
