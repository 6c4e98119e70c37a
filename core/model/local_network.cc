#include <algorithm>
#include <cassert>

#include "core/math/cache_lines.h"
#include "core/math/part_range.h"
#include "core/model/network.h"

namespace dtrain::model {
namespace {

// Spreads slice seeds apart; slice 0 keeps the step's own seed, so one slice is the plain pass.
constexpr std::uint64_t kSliceSeedStride = 0x9E3779B97F4A7C15ull;

LossValue Total(std::span<const LossValue> values) {
  LossValue total;
  for (const LossValue& v : values) {
    total.loss_sum += v.loss_sum;
    total.correct += v.correct;
  }
  return total;
}

}  // namespace

bool SplitsBatches(const Model& model) { return model.StatisticRanges().empty(); }

LocalNetwork::LocalNetwork(ModelSpec spec, int capacity, int threads) : model_(std::move(spec)) {
  // One thread takes the row pass too (as one slice, inline): its optimizer step is fused.
  if (model_.SplitsRows()) {
    split_ = Split::kRows;
  } else if (threads > 1 && SplitsBatches(model_)) {
    split_ = Split::kSlices;
  }
  const int slices = split_ == Split::kNone ? 1 : std::max(threads, 1);
  capacity = std::max(capacity, 1);
  if (split_ == Split::kSlices) {
    for (int s = 0; s < slices; ++s)
      workspaces_.emplace_back(model_, (capacity + slices - 1) / slices);
    for (int s = 1; s < slices; ++s) slice_grads_.emplace_back(model_.NumParams());
  } else {
    workspaces_.emplace_back(model_, capacity, split_ == Split::kRows);
  }
  if (split_ != Split::kNone) team_ = std::make_unique<math::ThreadTeam>(slices);
  slice_values_.resize(static_cast<std::size_t>(slices));
}

LocalNetwork::~LocalNetwork() = default;

int LocalNetwork::Slices() const { return static_cast<int>(slice_values_.size()); }

void LocalNetwork::ForSlices(int rows, const std::function<void(int, int, int)>& pass) {
  const int slices = Slices();
  team_->Run([&](int s) {
    const math::PartRange r = math::PartOf(static_cast<std::size_t>(rows), slices, s);
    const auto n = static_cast<int>(r.end - r.begin);
    if (n == 0) {  // a batch of fewer rows than slices
      slice_values_[static_cast<std::size_t>(s)] = {};
      return;
    }
    pass(s, static_cast<int>(r.begin), n);
  });
}

Result<LossValue> LocalNetwork::ForwardBackward(const float* params, const float* x, const float* y,
                                                int rows, float weight_decay, float* grad) {
  switch (split_) {
    case Split::kNone:
      return model_.ForwardBackward(params, x, y, rows, weight_decay, grad, workspaces_.front(),
                                    finished_);
    case Split::kRows:
      if (finished_) return RowPassByLayer(params, x, y, rows, weight_decay, grad);
      return RowSplitPass(params, x, y, rows, weight_decay, grad, {});
    case Split::kSlices:
      break;
  }
  const std::size_t width = ModelInputShape(model_.spec()).Size();
  ForSlices(rows, [&](int s, int first, int n) {
    float* slice_grad = s == 0 ? grad : slice_grads_[static_cast<std::size_t>(s) - 1].data();
    slice_values_[static_cast<std::size_t>(s)] =
        model_.ForwardBackward(params, x + static_cast<std::size_t>(first) * width, y + first, n,
                               weight_decay, slice_grad, workspaces_[static_cast<std::size_t>(s)]);
  });
  CombineSliceGradients(rows, grad);
  return Total(slice_values_);
}

Result<LossValue> LocalNetwork::ForwardBackwardStep(float* params, const float* x, const float* y,
                                                    int rows, float weight_decay, float* grad,
                                                    optim::Optimizer& optimizer, float lr) {
  if (split_ != Split::kRows) {
    return Network::ForwardBackwardStep(params, x, y, rows, weight_decay, grad, optimizer, lr);
  }
  assert(optimizer.begin() == 0 && optimizer.size() == NumParams());
  const LossValue value =
      RowSplitPass(params, x, y, rows, weight_decay, grad, [&](std::size_t begin, std::size_t end) {
        optimizer.StepPart(begin, {params + begin, end - begin}, {grad + begin, end - begin}, lr);
      });
  optimizer.EndPartedStep();
  return value;
}

LossValue LocalNetwork::RowSplitPass(const float* params, const float* x, const float* y, int rows,
                                     float weight_decay, float* grad,
                                     const Model::GradientDone& done) {
  ForSlices(rows, [&](int s, int first, int n) {
    slice_values_[static_cast<std::size_t>(s)] =
        model_.ForwardBackwardRows(params, x, y, first, n, rows, workspaces_.front());
  });
  if (Slices() > 1) {
    // Every thread has read every parameter; each is about to write about its own run of them
    // (a fused step) or have them written (the step after the pass). Dropping the runs it will
    // not write lets the next writes find no copy in this core (bench_shared_lines). A Run of its
    // own, so no thread drops lines another has begun writing.
    team_->Run([&](int part) {
      const math::PartRange own = math::PartOf(NumParams(), Slices(), part);
      math::DropFromCaches({params, own.begin});
      math::DropFromCaches({params + own.end, NumParams() - own.end});
    });
  }
  team_->Run([&](int part) {
    model_.ParamGradient(params, x, rows, weight_decay, grad, workspaces_.front(), part, Slices(),
                         done);
  });
  return Total(slice_values_);
}

LossValue LocalNetwork::RowPassByLayer(const float* params, const float* x, const float* y,
                                       int rows, float weight_decay, float* grad) {
  Workspace& ws = workspaces_.front();
  ForSlices(rows, [&](int s, int first, int n) {
    slice_values_[static_cast<std::size_t>(s)] =
        model_.ForwardRows(params, x, y, first, n, rows, ws);
  });
  const LossValue value = Total(slice_values_);
  for (std::size_t l = model_.NumLayers(); l-- > 0;) {
    ForSlices(rows,
              [&](int, int first, int n) { model_.BackwardLayerRows(params, x, first, n, ws, l); });
    if (model_.layer(l).NumParams() == 0) continue;
    team_->Run([&](int part) {
      model_.LayerParamGradient(params, x, rows, weight_decay, grad, ws, part, Slices(), l);
    });
    finished_(model_.ParamOffset(l));
  }
  return value;
}

void LocalNetwork::CombineSliceGradients(int rows, float* grad) {
  // grad = sum over slices of (rows_s / rows) g_s, slice by slice for each coordinate; the
  // coordinates are shared out over the team. An empty slice weighs 0 (its gradient is unset).
  const int slices = Slices();
  const auto weight = [&](int s) {
    const math::PartRange r = math::PartOf(static_cast<std::size_t>(rows), slices, s);
    return static_cast<float>(r.end - r.begin) / static_cast<float>(rows);
  };
  const std::size_t n = model_.NumParams();
  team_->Run([&](int part) {
    const math::PartRange r = math::PartOf(n, slices, part);
    float* out = grad + r.begin;
    const std::size_t count = r.end - r.begin;
    const float first = weight(0);
    for (std::size_t i = 0; i < count; ++i) out[i] *= first;
    for (int s = 1; s < slices; ++s) {
      const float w = weight(s);
      if (w == 0.0f) continue;
      const float* g = slice_grads_[static_cast<std::size_t>(s) - 1].data() + r.begin;
      for (std::size_t i = 0; i < count; ++i) out[i] += w * g[i];
    }
  });
}

Result<LossValue> LocalNetwork::Evaluate(const float* params, const float* x, const float* y,
                                         int rows) {
  const std::size_t width = ModelInputShape(model_.spec()).Size();
  switch (split_) {
    case Split::kNone:
      return model_.Evaluate(params, x, y, rows, workspaces_.front());
    case Split::kRows:
      ForSlices(rows, [&](int s, int first, int n) {
        slice_values_[static_cast<std::size_t>(s)] =
            model_.EvaluateRows(params, x, y, first, n, workspaces_.front());
      });
      break;
    case Split::kSlices:
      ForSlices(rows, [&](int s, int first, int n) {
        slice_values_[static_cast<std::size_t>(s)] =
            model_.Evaluate(params, x + static_cast<std::size_t>(first) * width, y + first, n,
                            workspaces_[static_cast<std::size_t>(s)]);
      });
      break;
  }
  return Total(slice_values_);
}

void LocalNetwork::SetNoiseSeed(std::uint64_t seed) {
  for (std::size_t s = 0; s < workspaces_.size(); ++s) {
    workspaces_[s].SetNoiseSeed(seed + s * kSliceSeedStride);
  }
}

}  // namespace dtrain::model
