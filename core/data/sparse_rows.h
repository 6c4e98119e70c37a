// SparseRows: labelled rows of (feature, value) pairs in compressed sparse row form — click logs
// and bags of words, with millions of features of which each row sets a few dozen. Nothing is
// densified: memory is proportional to the non-zeros.
//
//   Result<SparseRows> rows = ReadLibsvmSparse("clicks.svm", {.hash_bits = 24});
//   for (std::size_t r = 0; r < rows->rows(); ++r) { rows->Index(r); rows->Value(r); ... }
//
// Invariants: row_start has rows() + 1 entries, from 0 to NonZeros(); within a row the feature
// indices are 0-based, < features and strictly increasing (a reader sums a row's duplicates).
// Plain values: one thread at a time, or shared read-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/data/dataset.h"
#include "core/status.h"

namespace dtrain::data {

struct SparseRows {
  std::uint64_t features = 0;
  std::vector<std::uint64_t> row_start{0};
  std::vector<std::uint32_t> index;
  std::vector<float> value;
  std::vector<float> labels;  // one per row, as Dataset's
  int num_classes = 0;        // as Dataset's
  std::string source;         // the file, for messages

  std::size_t rows() const { return labels.size(); }
  std::size_t NonZeros() const { return index.size(); }
  std::span<const std::uint32_t> Index(std::size_t row) const {
    return {index.data() + row_start[row], row_start[row + 1] - row_start[row]};
  }
  std::span<const float> Value(std::size_t row) const {
    return {value.data() + row_start[row], row_start[row + 1] - row_start[row]};
  }
  // Memory held, in bytes.
  std::size_t Bytes() const;
};

// The largest feature index libsvm text may use without hashing (indices count from 1).
inline constexpr std::uint64_t kMaxSparseFeatures = 0xFFFF'FFFFu;

struct LibsvmOptions {
  // > 0: indices must lie in 1..features. 0: any in 1..kMaxSparseFeatures, and `features`
  // becomes the largest one seen. Ignored with hashing.
  std::uint64_t features = 0;
  // 1..32: every feature's name (the text before ':', digits or not) is hashed into
  // [0, 2^hash_bits) by HashFeature; features = 2^hash_bits. 0: no hashing.
  int hash_bits = 0;
  bool classification = true;  // labels are class indices (readers.h has the rule)
};

// libsvm/svmlight text, "label name:value name:value ... [# comment]", kept sparse. Errors as
// ReadLibsvm's (readers.h): they name the line and column, never the text.
Result<SparseRows> ReadLibsvmSparse(const std::string& path, const LibsvmOptions& options);

// The feature a name hashes to under `bits` (1..32) bits: the top bits of a 64-bit FNV-1a hash
// passed through SplitMix64's finaliser. Stable across versions: a hashed model depends on it.
std::uint32_t HashFeature(std::string_view name, int bits);

// The rows as a dense Dataset of rows.features float columns (absent entries 0).
Dataset Densify(const SparseRows& rows);

// The rows `indices` (each < rows.rows()) in that order; features, classes and source kept.
SparseRows SelectRows(const SparseRows& rows, std::span<const std::uint32_t> indices);
// {train, validation} as SplitValidation (dataset.h) splits a Dataset of as many rows, with the
// same rows held out for the same seed.
std::pair<SparseRows, SparseRows> SplitValidation(const SparseRows& rows, double fraction,
                                                  std::uint64_t seed);

}  // namespace dtrain::data
