#include "core/sparse/sparse_batch.h"

namespace dtrain::sparse {

SparseBatch MakeSparseBatch(const data::SparseRows& data, std::span<const std::uint32_t> indices) {
  SparseBatch b;
  FillSparseBatch(data, indices, &b);
  return b;
}

void FillSparseBatch(const data::SparseRows& data, std::span<const std::uint32_t> indices,
                     SparseBatch* out) {
  SparseBatch& b = *out;
  b.keys.clear();
  b.local.clear();
  b.value.clear();
  b.labels.clear();
  b.row_start.assign(1, 0);
  b.index.Clear();
  for (const std::uint32_t row : indices) {
    const std::span<const std::uint32_t> index = data.Index(row);
    const std::span<const float> value = data.Value(row);
    for (const std::uint32_t feature : index) {
      const auto [local, added] = b.index.Insert(feature);
      if (added) b.keys.push_back(feature);
      b.local.push_back(local);
    }
    b.value.insert(b.value.end(), value.begin(), value.end());
    b.row_start.push_back(static_cast<std::uint32_t>(b.local.size()));
    b.labels.push_back(data.labels[row]);
  }
}

}  // namespace dtrain::sparse
