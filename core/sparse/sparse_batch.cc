#include "core/sparse/sparse_batch.h"

#include <algorithm>

namespace dtrain::sparse {

SparseBatch MakeSparseBatch(const data::SparseRows& data, std::span<const std::uint32_t> indices) {
  SparseBatch b;
  FillSparseBatch(data, indices, &b);
  return b;
}

void FillSparseBatch(const data::SparseRows& data, std::span<const std::uint32_t> indices,
                     SparseBatch* out) {
  SparseBatch& b = *out;
  b.local.clear();
  b.value.clear();
  b.labels.clear();
  b.row_start.assign(1, 0);
  for (const std::uint32_t row : indices) {
    const std::span<const std::uint32_t> index = data.Index(row);
    const std::span<const float> value = data.Value(row);
    b.local.insert(b.local.end(), index.begin(), index.end());  // features, until re-indexed
    b.value.insert(b.value.end(), value.begin(), value.end());
    b.row_start.push_back(static_cast<std::uint32_t>(b.local.size()));
    b.labels.push_back(data.labels[row]);
  }
  b.keys.assign(b.local.begin(), b.local.end());
  std::sort(b.keys.begin(), b.keys.end());
  b.keys.erase(std::unique(b.keys.begin(), b.keys.end()), b.keys.end());
  for (std::uint32_t& feature : b.local) {
    feature = static_cast<std::uint32_t>(std::lower_bound(b.keys.begin(), b.keys.end(), feature) -
                                         b.keys.begin());
  }
}

}  // namespace dtrain::sparse
