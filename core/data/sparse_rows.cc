// SparseRows' own operations: its size, a dense copy, and picking or splitting rows.
#include "core/data/sparse_rows.h"

namespace dtrain::data {

std::size_t SparseRows::Bytes() const {
  return row_start.size() * sizeof(std::uint64_t) + index.size() * sizeof(std::uint32_t) +
         value.size() * sizeof(float) + labels.size() * sizeof(float);
}

Dataset Densify(const SparseRows& rows) {
  Dataset d;
  d.rows = rows.rows();
  d.features = static_cast<std::size_t>(rows.features);
  d.floats.resize(d.rows * d.features, 0.0f);
  for (std::size_t r = 0; r < d.rows; ++r) {
    const std::span<const std::uint32_t> index = rows.Index(r);
    const std::span<const float> value = rows.Value(r);
    float* row = d.floats.data() + r * d.features;
    for (std::size_t i = 0; i < index.size(); ++i) row[index[i]] = value[i];
  }
  d.labels = rows.labels;
  d.num_classes = rows.num_classes;
  d.source = rows.source;
  return d;
}

SparseRows SelectRows(const SparseRows& rows, std::span<const std::uint32_t> indices) {
  SparseRows out;
  out.features = rows.features;
  out.num_classes = rows.num_classes;
  out.source = rows.source;
  out.row_start.reserve(indices.size() + 1);
  out.labels.reserve(indices.size());
  for (const std::uint32_t r : indices) {
    const std::span<const std::uint32_t> index = rows.Index(r);
    const std::span<const float> value = rows.Value(r);
    out.index.insert(out.index.end(), index.begin(), index.end());
    out.value.insert(out.value.end(), value.begin(), value.end());
    out.row_start.push_back(out.index.size());
    out.labels.push_back(rows.labels[r]);
  }
  return out;
}

std::pair<SparseRows, SparseRows> SplitValidation(const SparseRows& rows, double fraction,
                                                  std::uint64_t seed) {
  const RowSplit split = SplitRowsForValidation(rows.rows(), fraction, seed);
  std::pair<SparseRows, SparseRows> out{SelectRows(rows, split.train),
                                        SelectRows(rows, split.validation)};
  out.first.source += " [train split]";
  out.second.source += " [validation split]";
  return out;
}

}  // namespace dtrain::data
