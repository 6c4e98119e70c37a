// Dataset: an in-memory table of feature rows and labels, and the per-batch scaling that turns a
// set of its rows into the float matrix a model trains on.
//
//   Scaling s = FitStandardize(train);                 // statistics of the training rows only
//   GatherBatch(train, s, sampler.Batch(epoch, i), x, y);  // x: [n x features], y: [n]
//
// Features stay in their stored type (uint8 pixels from IDX files stay one byte each) and, for
// NumPy files, in the file itself (memory-mapped, MappedRows); scaling is applied a batch at a
// time, so no float copy of a whole byte or mapped data set ever exists.
// Datasets and Scalings are plain values: one thread at a time, or shared read-only (GatherBatch
// only reads them and may run concurrently on the same inputs with different outputs).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/math/buffer.h"

namespace dtrain::data {

class MappedFile;

// Feature rows read in place from a memory-mapped file (a NumPy array): the file's row r is the
// `features` values of `type` at data + r * features * size, at any alignment, little-endian. A
// set holds the file's rows listed in `rows`, in that order (all of them when empty: a split
// lists its part). Images of more than one channel are stored channel by channel (channels x
// height x width, NumPy's N x C x H x W) but read in the set's height, width, channel order:
// feature j of a row is the file row's value FileFeature(j).
struct MappedRows {
  enum class Type { kUint8, kFloat32, kFloat64 } type = Type::kFloat32;
  std::shared_ptr<const MappedFile> file;  // keeps `data` mapped
  const std::uint8_t* data = nullptr;
  std::vector<std::uint32_t> rows;
  std::size_t channels = 1, plane = 0;  // channels > 1: each of `plane` (height x width) values

  std::size_t FileRow(std::size_t r) const { return rows.empty() ? r : rows[r]; }
  // Feature j (pixel j / channels, channel j % channels) in the file's channel-by-channel row.
  std::size_t FileFeature(std::size_t j) const {
    return channels == 1 ? j : j % channels * plane + j / channels;
  }
};

struct Dataset {
  std::size_t rows = 0, features = 0;
  math::ByteBuffer bytes;     // rows*features row-major when features are stored as uint8 (IDX)
  math::FloatBuffer floats;   // rows*features row-major from text and generators
  std::shared_ptr<const MappedRows> mapped;  // in a mapped file (NumPy); bytes, floats empty
  std::vector<float> labels;  // one per row: class index (0..num_classes-1) or regression target
  int num_classes = 0;        // 0 for regression sets; max label + 1 for classification
  std::string source;         // file (or "synthetic:blobs") for messages
  // Images (IDX, NumPy arrays of 3 or 4 dimensions): each row is an image_height x image_width
  // image of image_channels values a pixel, in height, width, channel order (features = the
  // product of the three); height and width 0 for data without a shape of its own.
  std::size_t image_height = 0, image_width = 0, image_channels = 1;

  // True when the features live in `bytes`. A data set without feature values (no rows or no
  // features) reports false; it has nothing to gather either way.
  bool stored_as_bytes() const { return !bytes.empty(); }
  // Memory held by the features, in bytes (a mapped file's pages are the kernel's: 0).
  std::size_t FeatureBytes() const { return bytes.size() + floats.size() * sizeof(float); }
};

// Scaling applied a batch at a time: divide by a constant, or standardise with per-feature
// mean/std computed on the TRAINING set only (features with std 0 get inv_std 1).
struct Scaling {
  enum class Kind { kConstant, kStandardize } kind = Kind::kConstant;
  float divisor = 1.0f;              // kConstant: x / divisor (applied as x * (1 / divisor))
  std::vector<float> mean, inv_std;  // kStandardize: (x - mean[j]) * inv_std[j]
};

// divisor must be nonzero (255 maps pixels to [0, 1]).
Scaling ConstantScaling(float divisor);
// Population mean and standard deviation of every feature over all rows of `train`.
Scaling FitStandardize(const Dataset& train);

// Copies rows `indices` into x [indices.size() x features] (scaled, float) and y [indices.size()].
// Every index must be < d.rows; a kStandardize scaling must have d.features entries.
// Allocates nothing; runs of consecutive indices are converted as one block.
void GatherBatch(const Dataset& d, const Scaling& s, std::span<const std::uint32_t> indices,
                 float* x, float* y);

// The rows a validation split of `rows` rows holds out: round(fraction*rows) of them (fraction
// clamped to [0, 1]), chosen by a seeded shuffle; both lists ascending.
struct RowSplit {
  std::vector<std::uint32_t> train, validation;
};
RowSplit SplitRowsForValidation(std::size_t rows, double fraction, std::uint64_t seed);

// Splits off SplitRowsForValidation's rows as validation. Returns
// {train, validation}. fraction is clamped to [0, 1]. Both parts keep the original row order,
// storage type and num_classes; the training part reuses d's memory, so the peak is d plus the
// validation rows.
std::pair<Dataset, Dataset> SplitValidation(Dataset d, double fraction, std::uint64_t seed);

}  // namespace dtrain::data
