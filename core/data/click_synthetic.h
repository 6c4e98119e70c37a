// Synthetic click logs with a planted model, for sparse models at scale: each row sets
// `nonzeros` binary features drawn from a power law over [0, features) (feature i with
// probability about proportional to 1 / (i + 1): a few are in most rows, most are rare), and is
// a click (label 1) with probability sigmoid(bias + sum of the planted weights of its features).
// The planted weight of a feature is a pure function of (seed, feature), so no table of 10^7
// weights exists, and the planted model's own log loss and AUC (the best any model can do on
// average) come from the rows' probabilities.
//
//   ClickData clicks = MakeClicks({.rows = 1'000'000, .features = 10'000'000, .seed = 3});
//   WriteLibsvm(clicks.rows, "clicks.svm");   // for other tools
//
// Pure functions of their options: safe for concurrent use.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/data/sparse_rows.h"
#include "core/status.h"

namespace dtrain::data {

struct ClickOptions {
  std::size_t rows = 1000;
  std::uint64_t features = 1u << 20;  // in [1, kMaxSparseFeatures]
  int nonzeros = 40;                  // features drawn per row (repeats merge: value 2, ...)
  // Planted weights ~ N(0, weight_scale^2): with 40 features a row's score varies by about 1.6
  // around the bias plus what the most frequent features' weights add to every row, so the
  // click rate depends on the seed (0.31 at seed 3, with 10^6 features; planted AUC 0.83).
  float weight_scale = 0.25f;
  float bias = -2.0f;
  std::uint64_t seed = 1;
};

struct ClickData {
  SparseRows rows;                 // labels 0/1, num_classes 2, source "synthetic:clicks"
  std::vector<float> probability;  // per row: the planted model's P(click)
};

ClickData MakeClicks(const ClickOptions& o);
// The planted weight of `feature`.
float PlantedWeight(const ClickOptions& o, std::uint64_t feature);
// Writes rows as libsvm text ("label i:v ...", 1-based indices).
Status WriteLibsvm(const SparseRows& rows, const std::string& path);

}  // namespace dtrain::data
