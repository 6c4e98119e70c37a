// Model's row-split pass: the slices of one batch on several threads, sharing one workspace,
// then the parameter gradient in parts (see model.h). Only layers whose passes go row by row,
// without scratch or state (dense, activation, flatten), take part; LocalNetwork checks
// SplitsRows.
#include <algorithm>
#include <cassert>

#include "core/math/elementwise.h"
#include "core/math/part_range.h"
#include "core/model/model.h"

namespace dtrain::model {
namespace {

std::size_t At(int row, const Shape& shape) { return static_cast<std::size_t>(row) * shape.Size(); }

}  // namespace

bool Model::SplitsRows() const {
  return std::all_of(chain_.begin(), chain_.end(),
                     [](const std::unique_ptr<Layer>& layer) { return layer->SplitsRows(); });
}

LossValue Model::EvaluateRows(const float* params, const float* x, const float* y, int first,
                              int rows, Workspace& ws) const {
  const LayerPass pass{.rows = rows, .scratch = ws.scratch_.data()};
  const float* out = Forward(params, x + At(first, ModelInputShape(spec_)), ws, pass, first);
  return ComputeLoss(spec_.loss, out, y + first, rows, spec_.outputs, nullptr);
}

LossValue Model::ForwardBackwardRows(const float* params, const float* x, const float* y, int first,
                                     int rows, int total_rows, Workspace& ws) const {
  const LossValue value = ForwardRows(params, x, y, first, rows, total_rows, ws);
  for (std::size_t l = chain_.size(); l-- > 0;) BackwardLayerRows(params, x, first, rows, ws, l);
  return value;
}

LossValue Model::ForwardRows(const float* params, const float* x, const float* y, int first,
                             int rows, int total_rows, Workspace& ws) const {
  assert(SplitsRows() && ws.deltas_.size() == chain_.size());
  const LayerPass pass{.rows = rows, .training = true, .noise_seed = ws.noise_seed_};
  const float* out = Forward(params, x + At(first, ModelInputShape(spec_)), ws, pass, first);
  const std::size_t last = chain_.size() - 1;
  float* dout = ws.deltas_[last].data() + At(first, chain_[last]->output());
  const LossValue value = ComputeLoss(spec_.loss, out, y + first, rows, spec_.outputs, dout);
  // ComputeLoss took the mean over this slice; the step's gradient is over the whole batch.
  math::Scale(static_cast<float>(rows) / static_cast<float>(total_rows),
              {dout, At(rows, chain_[last]->output())});
  return value;
}

void Model::BackwardLayerRows(const float* params, const float* x, int first, int rows,
                              Workspace& ws, std::size_t l) const {
  const LayerPass pass{.rows = rows, .training = true, .noise_seed = ws.noise_seed_};
  const Shape shape = chain_[l]->output();
  const float* input = l == 0 ? x + At(first, ModelInputShape(spec_))
                              : ws.activations_[l - 1].data() + At(first, chain_[l - 1]->output());
  float* din = l == 0 ? nullptr : ws.deltas_[l - 1].data() + At(first, chain_[l - 1]->output());
  chain_[l]->BackwardRows(params + offsets_[l], input, ws.activations_[l].data() + At(first, shape),
                          ws.deltas_[l].data() + At(first, shape), din, pass);
}

void Model::ParamGradient(const float* params, const float* x, int total_rows, float weight_decay,
                          float* grad, Workspace& ws, int part, int parts,
                          const GradientDone& done) const {
  for (std::size_t l = 0; l < chain_.size(); ++l) {
    LayerParamGradient(params, x, total_rows, weight_decay, grad, ws, part, parts, l, done);
  }
}

void Model::LayerParamGradient(const float* params, const float* x, int total_rows,
                               float weight_decay, float* grad, Workspace& ws, int part, int parts,
                               std::size_t l, const GradientDone& done) const {
  // Part p takes the units that start in the p-th of `parts` equal runs of the whole vector: about
  // the run an optimizer shared by the same threads steps on that thread, still in its cache.
  const math::PartRange run = math::PartOf(num_params_, parts, part);
  const std::size_t first = offsets_[l], count = chain_[l]->NumParams();
  const std::size_t begin = std::max(run.begin, first), end = std::min(run.end, first + count);
  if (begin >= end) return;
  const float* input = l == 0 ? x : ws.activations_[l - 1].data();
  const math::PartRange filled =
      chain_[l]->ParamGradient(params + first, input, ws.deltas_[l].data(), total_rows,
                               weight_decay, grad + first, begin - first, end - first);
  if (done && filled.end > filled.begin) done(first + filled.begin, first + filled.end);
}

}  // namespace dtrain::model
