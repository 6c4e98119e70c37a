#include "core/data/dataset.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

#include "core/data/random.h"
#include "core/data/sampler.h"
#include "core/math/elementwise.h"

namespace dtrain::data {
namespace {

// Stream id of the validation split, so it is independent of every epoch's shuffle.
constexpr std::uint64_t kValidationStream = 0x76616C6964617465ULL;  // "validate"

// Feature j of a row of T values stored at `row`, any alignment, as the float GatherBatch makes.
template <typename T>
float LoadFeature(const std::uint8_t* row, std::size_t j) {
  T value;
  std::memcpy(&value, row + j * sizeof(T), sizeof(T));
  return static_cast<float>(value);
}

// Per-feature population mean and variance of `rows` rows of `features` T values, row r at
// row_at(r), feature j its value at_feature(j) (two passes, accumulated in double).
template <typename T, typename RowAt, typename AtFeature>
void FeatureMoments(RowAt row_at, AtFeature at_feature, std::size_t rows, std::size_t features,
                    std::vector<double>& mean, std::vector<double>& variance) {
  mean.assign(features, 0.0);
  variance.assign(features, 0.0);
  if (rows == 0) return;
  for (std::size_t r = 0; r < rows; ++r) {
    const std::uint8_t* row = row_at(r);
    for (std::size_t j = 0; j < features; ++j) {
      mean[j] += static_cast<double>(LoadFeature<T>(row, at_feature(j)));
    }
  }
  for (double& m : mean) m /= static_cast<double>(rows);
  for (std::size_t r = 0; r < rows; ++r) {
    const std::uint8_t* row = row_at(r);
    for (std::size_t j = 0; j < features; ++j) {
      const double delta = static_cast<double>(LoadFeature<T>(row, at_feature(j))) - mean[j];
      variance[j] += delta * delta;
    }
  }
  for (double& v : variance) v /= static_cast<double>(rows);
}

// The moments of d's features in whichever storage holds them.
void DatasetMoments(const Dataset& d, std::vector<double>& mean, std::vector<double>& variance) {
  const auto in = [&]<typename T>(const std::uint8_t* base, T /*type*/) {
    const std::size_t row_bytes = d.features * sizeof(T);
    const auto row_at = [&](std::size_t r) {
      return base + (d.mapped ? d.mapped->FileRow(r) : r) * row_bytes;
    };
    const auto at_feature = [&](std::size_t j) { return d.mapped ? d.mapped->FileFeature(j) : j; };
    FeatureMoments<T>(row_at, at_feature, d.rows, d.features, mean, variance);
  };
  if (d.mapped) {
    switch (d.mapped->type) {
      case MappedRows::Type::kUint8:
        return in(d.mapped->data, std::uint8_t{});
      case MappedRows::Type::kFloat32:
        return in(d.mapped->data, float{});
      case MappedRows::Type::kFloat64:
        return in(d.mapped->data, double{});
    }
  }
  if (d.stored_as_bytes()) return in(d.bytes.data(), std::uint8_t{});
  in(reinterpret_cast<const std::uint8_t*>(d.floats.data()), float{});
}

// ConvertMapped for images stored channel by channel: each row's features gathered into height,
// width, channel order, then shifted and scaled with the same two float operations as
// math::BytesToFloat's, so they give the bits the same values stored in that order give.
template <typename T>
void ConvertPlanes(const MappedRows& m, std::size_t first, std::size_t run, std::size_t width,
                   const float* shift, const float* scale, float uniform_scale, float* out) {
  for (std::size_t r = 0; r < run; ++r) {
    const std::uint8_t* row = m.data + (first + r) * width * sizeof(T);
    float* to = out + r * width;
    for (std::size_t j = 0; j < width; ++j) {
      const float value = LoadFeature<T>(row, m.FileFeature(j));
      to[j] = shift != nullptr ? (value - shift[j]) * scale[j] : value * uniform_scale;
    }
  }
}

// GatherBatch's conversion of `run` consecutive rows of the file behind `m` from file row `first`.
void ConvertMapped(const MappedRows& m, std::size_t first, std::size_t run, int cols,
                   const float* shift, const float* scale, float uniform_scale, float* out) {
  const auto rows = static_cast<int>(run);
  const auto width = static_cast<std::size_t>(cols);
  const bool planes = m.channels > 1;
  switch (m.type) {
    case MappedRows::Type::kUint8:
      if (planes) {
        return ConvertPlanes<std::uint8_t>(m, first, run, width, shift, scale, uniform_scale, out);
      }
      return math::BytesToFloat(m.data + first * width, rows, cols, shift, scale, uniform_scale,
                                out);
    case MappedRows::Type::kFloat32:
      if (planes)
        return ConvertPlanes<float>(m, first, run, width, shift, scale, uniform_scale, out);
      return math::UnalignedFloatsToFloat(m.data + first * width * 4, rows, cols, shift, scale,
                                          uniform_scale, out);
    case MappedRows::Type::kFloat64:
      if (planes)
        return ConvertPlanes<double>(m, first, run, width, shift, scale, uniform_scale, out);
      return math::UnalignedDoublesToFloat(m.data + first * width * 8, rows, cols, shift, scale,
                                           uniform_scale, out);
  }
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

// Asks the CPU to fetch the cache lines of a row (at most its first 4 KiB) ahead of use.
void PrefetchRow(const void* row, std::size_t bytes) {
  const auto* at = static_cast<const char*>(row);
  for (std::size_t b = 0; b < std::min<std::size_t>(bytes, 4096); b += 64) {
    __builtin_prefetch(at + b);
  }
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
  DatasetMoments(train, mean, variance);
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
    // The next run's first row is somewhere else in memory: ask for it while this run converts.
    if (i + run < indices.size() && !d.mapped) {
      const std::size_t next = indices[i + run] * d.features;
      if (bytes) {
        PrefetchRow(d.bytes.data() + next, d.features);
      } else {
        PrefetchRow(d.floats.data() + next, d.features * sizeof(float));
      }
    }
    if (d.mapped) {
      // Runs of consecutive file rows within this run of set rows.
      for (std::size_t k = 0; k < run;) {
        const std::size_t file_first = d.mapped->FileRow(first + k);
        std::size_t file_run = 1;
        while (k + file_run < run &&
               d.mapped->FileRow(first + k + file_run) == file_first + file_run) {
          ++file_run;
        }
        ConvertMapped(*d.mapped, file_first, file_run, cols, shift, scale, uniform_scale,
                      out + k * d.features);
        k += file_run;
      }
    } else if (bytes) {
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
  validation.image_channels = d.image_channels;
  validation.source = d.source + " [validation split]";
  if (!d.bytes.empty()) {
    validation.bytes = SplitRows(d.bytes, d.features, train_rows, validation_rows);
  }
  if (!d.floats.empty()) {
    validation.floats = SplitRows(d.floats, d.features, train_rows, validation_rows);
  }
  validation.labels = SplitRows(d.labels, 1, train_rows, validation_rows);
  if (d.mapped) {  // both parts view the same file: only their row lists are new
    const auto part = [&](const std::vector<std::uint32_t>& rows) {
      auto m = std::make_shared<MappedRows>(*d.mapped);
      m->rows.resize(rows.size());
      for (std::size_t k = 0; k < rows.size(); ++k) {
        m->rows[k] = static_cast<std::uint32_t>(d.mapped->FileRow(rows[k]));
      }
      return m;
    };
    validation.mapped = part(validation_rows);
    d.mapped = part(train_rows);
  }
  Dataset train = std::move(d);
  train.rows = train_rows.size();
  train.source += " [train split]";
  return {std::move(train), std::move(validation)};
}

}  // namespace dtrain::data
