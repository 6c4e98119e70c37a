#include "core/data/dataset.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "core/data/random.h"
#include "core/data/sampler.h"
#include "core/math/elementwise.h"

namespace dtrain::data {
namespace {

// Stream id of the validation split, so it is independent of every epoch's shuffle.
constexpr std::uint64_t kValidationStream = 0x76616C6964617465ULL;  // "validate"

// Per-feature population mean and variance of a row-major [rows x features] table (two passes,
// accumulated in double).
template <typename T>
void FeatureMoments(const T* data, std::size_t rows, std::size_t features,
                    std::vector<double>& mean, std::vector<double>& variance) {
  mean.assign(features, 0.0);
  variance.assign(features, 0.0);
  if (rows == 0) return;
  for (std::size_t r = 0; r < rows; ++r) {
    const T* row = data + r * features;
    for (std::size_t j = 0; j < features; ++j) mean[j] += static_cast<double>(row[j]);
  }
  for (double& m : mean) m /= static_cast<double>(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    const T* row = data + r * features;
    for (std::size_t j = 0; j < features; ++j) {
      const double delta = static_cast<double>(row[j]) - mean[j];
      variance[j] += delta * delta;
    }
  }
  for (double& v : variance) v /= static_cast<double>(rows);
}

// Moves the rows listed in `train_rows` (ascending) to the front of `all`, in place, and returns
// the rows listed in `validation_rows` as a new container. Each row is `width` elements.
template <typename Container>
Container SplitRows(Container& all, std::size_t width, std::span<const std::uint32_t> train_rows,
                    std::span<const std::uint32_t> validation_rows) {
  Container validation(validation_rows.size() * width);
  for (std::size_t k = 0; k < validation_rows.size(); ++k) {
    std::copy_n(all.begin() + validation_rows[k] * width, width, validation.begin() + k * width);
  }
  // train_rows[k] >= k, so copying forward never overwrites a row still to be moved.
  for (std::size_t k = 0; k < train_rows.size(); ++k) {
    if (train_rows[k] != k) {
      std::copy_n(all.begin() + train_rows[k] * width, width, all.begin() + k * width);
    }
  }
  all.resize(train_rows.size() * width);
  return validation;
}

}  // namespace

Scaling ConstantScaling(float divisor) {
  assert(divisor != 0.0f);
  Scaling s;
  s.kind = Scaling::Kind::kConstant;
  s.divisor = divisor;
  return s;
}

Scaling FitStandardize(const Dataset& train) {
  std::vector<double> mean, variance;
  if (train.stored_as_bytes()) {
    FeatureMoments(train.bytes.data(), train.rows, train.features, mean, variance);
  } else {
    FeatureMoments(train.floats.data(), train.rows, train.features, mean, variance);
  }
  Scaling s;
  s.kind = Scaling::Kind::kStandardize;
  s.mean.resize(train.features);
  s.inv_std.resize(train.features);
  for (std::size_t j = 0; j < train.features; ++j) {
    const double stddev = std::sqrt(variance[j]);
    s.mean[j] = static_cast<float>(mean[j]);
    s.inv_std[j] = stddev > 0.0 ? static_cast<float>(1.0 / stddev) : 1.0f;
  }
  return s;
}

void GatherBatch(const Dataset& d, const Scaling& s, std::span<const std::uint32_t> indices,
                 float* x, float* y) {
  const bool standardize = s.kind == Scaling::Kind::kStandardize;
  assert(!standardize || (s.mean.size() == d.features && s.inv_std.size() == d.features));
  const float* shift = standardize ? s.mean.data() : nullptr;
  const float* scale = standardize ? s.inv_std.data() : nullptr;
  const float uniform_scale = standardize ? 1.0f : 1.0f / s.divisor;
  const bool bytes = d.stored_as_bytes();
  const int cols = static_cast<int>(d.features);

  std::size_t i = 0;
  while (i < indices.size()) {
    const std::size_t first = indices[i];
    std::size_t run = 1;
    while (i + run < indices.size() && indices[i + run] == first + run) ++run;
    assert(first + run <= d.rows);
    const std::size_t offset = first * d.features;
    float* out = x + i * d.features;
    if (bytes) {
      math::BytesToFloat(d.bytes.data() + offset, static_cast<int>(run), cols, shift, scale,
                         uniform_scale, out);
    } else {
      math::FloatsToFloat(d.floats.data() + offset, static_cast<int>(run), cols, shift, scale,
                          uniform_scale, out);
    }
    std::copy_n(d.labels.begin() + static_cast<std::ptrdiff_t>(first), run, y + i);
    i += run;
  }
}

RowSplit SplitRowsForValidation(std::size_t rows, double fraction, std::uint64_t seed) {
  const double f = fraction > 0.0 ? std::min(fraction, 1.0) : 0.0;  // NaN -> 0
  const auto validation_count =
      static_cast<std::size_t>(std::llround(f * static_cast<double>(rows)));

  std::vector<std::uint8_t> in_validation(rows, 0);
  {
    const std::vector<std::uint32_t> order =
        EpochPermutation(rows, MixSeed(seed, kValidationStream), 0);
    for (std::size_t k = 0; k < validation_count; ++k) in_validation[order[k]] = 1;
  }
  RowSplit split;
  split.train.reserve(rows - validation_count);
  split.validation.reserve(validation_count);
  for (std::size_t r = 0; r < rows; ++r) {
    (in_validation[r] ? split.validation : split.train).push_back(static_cast<std::uint32_t>(r));
  }
  return split;
}

std::pair<Dataset, Dataset> SplitValidation(Dataset d, double fraction, std::uint64_t seed) {
  const RowSplit split = SplitRowsForValidation(d.rows, fraction, seed);
  const std::vector<std::uint32_t>& train_rows = split.train;
  const std::vector<std::uint32_t>& validation_rows = split.validation;
  const std::size_t validation_count = validation_rows.size();

  Dataset validation;
  validation.rows = validation_count;
  validation.features = d.features;
  validation.num_classes = d.num_classes;
  validation.image_height = d.image_height;
  validation.image_width = d.image_width;
  validation.source = d.source + " [validation split]";
  if (!d.bytes.empty()) {
    validation.bytes = SplitRows(d.bytes, d.features, train_rows, validation_rows);
  }
  if (!d.floats.empty()) {
    validation.floats = SplitRows(d.floats, d.features, train_rows, validation_rows);
  }
  validation.labels = SplitRows(d.labels, 1, train_rows, validation_rows);

  Dataset train = std::move(d);
  train.rows = train_rows.size();
  train.source += " [train split]";
  return {std::move(train), std::move(validation)};
}

}  // namespace dtrain::data
