#include "core/train/batch_objective.h"

#include <algorithm>
#include <numeric>

#include "core/data/random.h"
#include "core/math/elementwise.h"

namespace dtrain::train {

std::vector<std::uint32_t> ObjectiveRows(std::size_t set_rows, std::size_t sample,
                                         std::uint64_t seed) {
  std::vector<std::uint32_t> rows(set_rows);
  std::iota(rows.begin(), rows.end(), 0u);
  if (sample == 0 || sample >= set_rows) return rows;
  // The first `sample` places of a seeded Fisher-Yates shuffle, then sorted.
  data::SplitMix64 rng(data::MixSeed(seed, 0x4c424647));  // "LBFG"
  for (std::size_t i = 0; i < sample; ++i) {
    const std::size_t j = i + rng.Bounded(static_cast<std::uint32_t>(set_rows - i));
    std::swap(rows[i], rows[j]);
  }
  rows.resize(sample);
  std::sort(rows.begin(), rows.end());
  return rows;
}

double FinishObjective(const model::Model& model, std::span<const float> params,
                       float weight_decay, double loss_sum, std::size_t rows,
                       std::span<float> grad) {
  math::Scale(1.0f / static_cast<float>(rows), grad);
  if (weight_decay != 0.0f) {
    for (const model::ParamRange& w : model.WeightRanges()) {
      math::Axpy(weight_decay, params.subspan(w.offset, w.count), grad.subspan(w.offset, w.count));
    }
  }
  return loss_sum / static_cast<double>(rows) +
         model.WeightDecayPenalty(params.data(), weight_decay);
}

BatchObjective::BatchObjective(const model::Model& model, const data::Dataset& set,
                               const data::Scaling& scaling, std::vector<std::uint32_t> rows,
                               float weight_decay, int chunk_rows)
    : model_(model),
      set_(set),
      scaling_(scaling),
      rows_(std::move(rows)),
      weight_decay_(weight_decay),
      chunk_rows_(chunk_rows),
      workspace_(model, chunk_rows),
      x_(static_cast<std::size_t>(chunk_rows) * set.features),
      y_(static_cast<std::size_t>(chunk_rows)) {}

template <typename PerChunk>
model::LossValue BatchObjective::ForChunks(std::size_t first, std::size_t last,
                                           const PerChunk& per_chunk) {
  model::LossValue total;
  for (std::size_t begin = first; begin < last;) {
    const std::size_t end = std::min(last, begin + static_cast<std::size_t>(chunk_rows_));
    data::GatherBatch(set_, scaling_, std::span(rows_).subspan(begin, end - begin), x_.data(),
                      y_.data());
    const model::LossValue chunk = per_chunk(static_cast<int>(end - begin));
    total.loss_sum += chunk.loss_sum;
    total.correct += chunk.correct;
    begin = end;
  }
  return total;
}

model::LossValue BatchObjective::AccumulateRows(std::span<const float> params, std::size_t first,
                                                std::size_t last, std::span<float> grad_sum) {
  if (chunk_grad_.empty()) chunk_grad_.resize(model_.NumParams());
  return ForChunks(first, last, [&](int n) {
    const model::LossValue chunk = model_.ForwardBackward(params.data(), x_.data(), y_.data(), n,
                                                          0.0f, chunk_grad_.data(), workspace_);
    math::Axpy(static_cast<float>(n), chunk_grad_, grad_sum);  // the chunk's mean times its rows
    return chunk;
  });
}

model::LossValue BatchObjective::Measure(std::span<const float> params) {
  return ForChunks(0, rows_.size(), [&](int n) {
    return model_.Evaluate(params.data(), x_.data(), y_.data(), n, workspace_);
  });
}

double BatchObjective::Evaluate(std::span<const float> params, std::span<float> grad) {
  std::fill(grad.begin(), grad.end(), 0.0f);
  last_ = AccumulateRows(params, 0, rows_.size(), grad);
  return FinishObjective(model_, params, weight_decay_, last_.loss_sum, rows_.size(), grad);
}

}  // namespace dtrain::train
