// A small classification set for L-BFGS tests: one Gaussian blob per class, overlapping so that
// no weight vector separates them (the regularised optimum is interior and unique).
//
//   data::Dataset set = GaussianBlobs(800, 5, 3, /*seed=*/7);
//
// Row r has label r % classes; feature j is N(0, 1) plus 1 when j % classes is the label.
// Deterministic for a seed on one standard library. Pure function.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>

#include "core/data/dataset.h"

namespace dtrain::testing {

inline data::Dataset GaussianBlobs(std::size_t rows, std::size_t features, int classes,
                                   std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const auto k = static_cast<std::size_t>(classes);
  data::Dataset d;
  d.rows = rows;
  d.features = features;
  d.num_classes = classes;
  d.floats.resize(rows * features);
  for (std::size_t r = 0; r < rows; ++r) {
    const std::size_t label = r % k;
    d.labels.push_back(static_cast<float>(label));
    for (std::size_t j = 0; j < features; ++j) {
      d.floats[r * features + j] = normal(rng) + (j % k == label ? 1.0f : 0.0f);
    }
  }
  return d;
}

}  // namespace dtrain::testing
