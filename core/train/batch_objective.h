// BatchObjective: the full-batch objective of a model over a fixed list of training rows, what
// L-BFGS minimises (core/optim/lbfgs.h):
//
//   f(w) = (1/N) sum over the N rows of loss(row; w)  +  wd/2 |W|^2   (weights, not biases)
//
// computed chunk_rows rows at a time, so memory holds one chunk's activations whatever N is.
// AccumulateRows gives one work unit's share (a Sandblaster worker's: a range of the row list):
// the loss sum and the sum of the rows' gradients, without the L2 term; FinishObjective turns the
// sums over all N rows into f and its gradient.
//
//   BatchObjective objective(model, train, scaling, ObjectiveRows(train.rows, 0, seed), wd, 256);
//   double f = objective.Evaluate(params, grad);
//
// Deterministic: the same rows, chunks and parameters give the same bits. One thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/data/dataset.h"
#include "core/math/buffer.h"
#include "core/model/model.h"

namespace dtrain::train {

// The rows an objective sums over: every row of a set of `set_rows` in order (sample 0 or
// >= set_rows), or a fixed sample of `sample` of them drawn by `seed`, in ascending order.
std::vector<std::uint32_t> ObjectiveRows(std::size_t set_rows, std::size_t sample,
                                         std::uint64_t seed);

// grad = grad_sum / rows + wd W, in place; returns loss_sum / rows + wd/2 |W|^2.
double FinishObjective(const model::Model& model, std::span<const float> params,
                       float weight_decay, double loss_sum, std::size_t rows,
                       std::span<float> grad);

class BatchObjective {
 public:
  // `model`, `set` and `scaling` must outlive the objective; chunk_rows >= 1.
  BatchObjective(const model::Model& model, const data::Dataset& set,
                 const data::Scaling& scaling, std::vector<std::uint32_t> rows,
                 float weight_decay, int chunk_rows);

  std::size_t rows() const { return rows_.size(); }

  // Over positions [first, last) of the row list: adds the sum of the rows' loss gradients to
  // grad_sum and returns their loss sum and correct count.
  model::LossValue AccumulateRows(std::span<const float> params, std::size_t first,
                                  std::size_t last, std::span<float> grad_sum);
  // f at params; its gradient is written to grad.
  double Evaluate(std::span<const float> params, std::span<float> grad);
  // The loss sum and correct count over all the rows, without a gradient (an evaluation).
  model::LossValue Measure(std::span<const float> params);
  // The data loss sum and correct count of the latest Evaluate (L-BFGS's accepted point is
  // always the objective's latest evaluation).
  const model::LossValue& last() const { return last_; }

 private:
  // Gathers positions [first, last) a chunk at a time and sums per_chunk(rows)'s loss values.
  template <typename PerChunk>
  model::LossValue ForChunks(std::size_t first, std::size_t last, const PerChunk& per_chunk);

  const model::Model& model_;
  const data::Dataset& set_;
  const data::Scaling& scaling_;
  std::vector<std::uint32_t> rows_;
  float weight_decay_;
  int chunk_rows_;
  model::Workspace workspace_;
  math::FloatBuffer x_, chunk_grad_;  // chunk_grad_: allocated by the first gradient
  std::vector<float> y_;
  model::LossValue last_;
};

}  // namespace dtrain::train
