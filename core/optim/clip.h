// Gradient clipping by global L2 norm (the norm of the whole flat gradient, not per layer).
//
//   double norm = ClipByGlobalNorm(grad, 5.0f);  // grad's norm is now <= 5
//   // norm is the gradient's norm before clipping: the value worth logging as a metric
//
// Sums of squares come from math::SquaredNorm (float blocks of 1024, accumulated in double), so
// the norm of a 10^6-float gradient is accurate to ~1e-7 relative. Pure functions of their
// arguments: safe for concurrent use on disjoint memory.
#pragma once

#include <span>

namespace dtrain::optim {

// sqrt(sum_i grad[i]^2).
double GlobalNorm(std::span<const float> grad);

// norm = GlobalNorm(grad); when max_norm > 0 and norm > max_norm, grad *= max_norm / norm, so its
// norm becomes max_norm (to float rounding). Leaves grad untouched when max_norm <= 0 (clipping
// off), when norm <= max_norm, or when norm is not finite (the caller decides whether to skip
// the step). Returns norm, the norm before clipping.
double ClipByGlobalNorm(std::span<float> grad, float max_norm);

}  // namespace dtrain::optim
