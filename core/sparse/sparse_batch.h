// SparseBatch: some rows of a SparseRows re-indexed to the features they touch — what a worker
// pulls from the parameter servers before a step and pushes gradients for after it.
//
//   SparseBatch batch = MakeSparseBatch(rows, sampler.Batch(epoch, i));
//   pull(batch.keys) -> slots [keys.size() x width];  model.ForwardBackward(batch, ...)
//
// Invariants: keys are unique, in the order the rows first use them; row r's entries are
// [row_start[r], row_start[r + 1]) of `local` (indices into keys) and `value`, in the row's feature
// order.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/data/sparse_rows.h"
#include "core/sparse/key_index.h"

namespace dtrain::sparse {

struct SparseBatch {
  std::vector<std::uint32_t> keys;
  std::vector<std::uint32_t> row_start{0};
  std::vector<std::uint32_t> local;
  std::vector<float> value;
  std::vector<float> labels;
  KeyIndex index;  // feature -> its place in keys (the fill's scratch, kept for the next batch)

  int rows() const { return static_cast<int>(labels.size()); }
};

// The rows `indices` of `data` (each < data.rows()), in that order.
SparseBatch MakeSparseBatch(const data::SparseRows& data, std::span<const std::uint32_t> indices);
// The same into `out`, reusing its memory (a training loop's batch allocates nothing once warm).
void FillSparseBatch(const data::SparseRows& data, std::span<const std::uint32_t> indices,
                     SparseBatch* out);

}  // namespace dtrain::sparse
