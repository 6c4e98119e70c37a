// FTRL-Proximal, per coordinate (McMahan et al., "Ad Click Prediction: a View from the
// Trenches", KDD 2013, Algorithm 1): the optimizer of click-prediction models. Each coordinate
// keeps two numbers, z and n; its weight is a closed form of them, so L1 and L2 cost nothing
// until a coordinate is touched (lazy), and L1 sets weights exactly to 0.
//
//   FtrlRates r{.alpha = 0.1f, .beta = 1.0f, .l1 = 1.0f, .l2 = 0.0f};
//   w = FtrlStep(g, w, z, n, r);          // one gradient g on a coordinate whose weight is w
//
// Invariants: n >= 0 is the sum of the coordinate's squared gradients; after any step, w ==
// FtrlWeight(z, n, r). alpha > 0 and beta > 0 (so that a weight is finite at n = 0).
#pragma once

#include <cmath>

namespace dtrain::optim {

struct FtrlRates {
  float alpha = 0.1f;  // step scale: coordinate i moves by alpha / (beta + sqrt(n_i))
  float beta = 1.0f;
  float l1 = 0.0f;
  float l2 = 0.0f;
};

// The weight of a coordinate with state (z, n):
//   0 if |z| <= l1, else -(z - sign(z) l1) / ((beta + sqrt(n)) / alpha + l2).
inline float FtrlWeight(float z, float n, const FtrlRates& r) {
  if (std::fabs(z) <= r.l1) return 0.0f;
  const float shrunk = z > 0.0f ? z - r.l1 : z + r.l1;
  return -shrunk / ((r.beta + std::sqrt(n)) / r.alpha + r.l2);
}

// The z of a coordinate whose first proximal term is centred at w, its initial value (FTRL
// starts from 0: z = 0): -w * beta / alpha. At n = 0 its weight is w itself when l1 = l2 = 0;
// L1 and L2 shrink it as they shrink every weight.
inline float FtrlStateOf(float w, const FtrlRates& r) { return -w * r.beta / r.alpha; }

// One gradient g on a coordinate whose weight is w:
//   sigma = (sqrt(n + g^2) - sqrt(n)) / alpha;  z += g - sigma * w;  n += g^2;
// returns the new weight.
inline float FtrlStep(float g, float w, float& z, float& n, const FtrlRates& r) {
  const float next = n + g * g;
  const float sigma = (std::sqrt(next) - std::sqrt(n)) / r.alpha;
  z += g - sigma * w;
  n = next;
  return FtrlWeight(z, n, r);
}

}  // namespace dtrain::optim
