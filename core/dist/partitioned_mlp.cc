#include "core/dist/partitioned_mlp.h"

#include <algorithm>
#include <cassert>
#include <utility>

#include "core/math/elementwise.h"
#include "core/math/gemm.h"

namespace dtrain::dist {
namespace {

using math::Trans;
using model::PartitionKind;

// A batch's loss sum and correct count as the floats a pipeline message carries: the loss
// rounded to a float, then what that rounding left out (about 48 bits in all), then the count.
// The last stage keeps the unpacked value too, so every partition reports the same loss.
constexpr std::size_t kLossFloats = 3;

void PackLoss(const model::LossValue& v, float* out) {
  out[0] = static_cast<float>(v.loss_sum);
  out[1] = static_cast<float>(v.loss_sum - static_cast<double>(out[0]));
  out[2] = static_cast<float>(v.correct);
}

model::LossValue UnpackLoss(const float* in) {
  return {static_cast<double>(in[0]) + static_cast<double>(in[1]), static_cast<long>(in[2])};
}

std::size_t Floats(int rows, int cols) {
  return static_cast<std::size_t>(rows) * static_cast<std::size_t>(cols);
}

// The row-major [rows x sum(widths)] array of an array held as column blocks.
void ToRowMajor(const float* blocks, const std::vector<int>& widths, int rows, float* out) {
  int total = 0;
  for (int w : widths) total += w;
  int column = 0;
  for (int w : widths) {
    for (int r = 0; r < rows; ++r) {
      std::copy_n(blocks + Floats(r, w), w, out + Floats(r, total) + column);
    }
    blocks += Floats(rows, w);
    column += w;
  }
}

}  // namespace

PartitionedMlp::PartitionedMlp(model::ModelSpec spec, model::PartitionPlan plan,
                               PartitionExchange& exchange, int micro_batches, int capacity)
    : model_(std::move(spec)),
      plan_(std::move(plan)),
      exchange_(exchange),
      part_(exchange.part()),
      micro_batches_(std::max(micro_batches, 1)),
      capacity_(capacity) {
  const std::vector<model::LayerView>& layers = model_.layers();
  const int n = static_cast<int>(layers.size());
  std::size_t at = 0;
  int widest = 0;
  for (int l = plan_.FirstLayer(part_); l < plan_.EndLayer(part_, n); ++l) {
    Share s;
    s.layer = l;
    s.in = layers[l].in;
    s.out = layers[l].out;
    s.cols = plan_.Columns(l, part_, s.out);
    s.first_col = plan_.FirstColumn(l, part_);
    s.weight = at;
    at += Floats(s.in, s.cols);
    s.bias = at;
    at += static_cast<std::size_t>(s.cols);
    s.activation = layers[l].activation;
    shares_.push_back(s);
    outputs_.emplace_back(Floats(capacity, s.out));  // tensor: the gathered layer
    widest = std::max({widest, s.in, s.out});
  }
  assert(at == plan_.Size(part_));
  delta_a_.resize(Floats(capacity, widest));
  delta_b_.resize(Floats(capacity, widest));
  dx_.resize(Floats(capacity, widest) + kLossFloats);  // + a pipeline backward message's loss
  message_.resize(Floats(capacity, shares_.back().out) + kLossFloats);
  if (plan_.kind == PartitionKind::kLayers && part_ > 0) {
    input_.resize(Floats(capacity, shares_.front().in));
  }
  const int outputs = model_.spec().outputs;
  logits_.resize(Floats(capacity, outputs));
  loss_grad_.resize(Floats(capacity, outputs));
}

void PartitionedMlp::Init(std::span<float> params, std::uint64_t seed) const {
  assert(params.size() == NumParams());
  model::PartitionInit(plan_, model_, part_, params, seed);
}

std::vector<int> PartitionedMlp::Widths(int layer) const {
  if (plan_.kind == PartitionKind::kLayers) return {model_.layers()[layer].out};
  std::vector<int> widths;
  const std::vector<int>& columns = plan_.columns[layer];
  for (int q = 0; q < plan_.parts; ++q) widths.push_back(columns[q + 1] - columns[q]);
  return widths;
}

std::vector<std::size_t> PartitionedMlp::Bounds(const std::vector<int>& widths, int rows) const {
  std::vector<std::size_t> bounds{0};
  for (int w : widths) bounds.push_back(bounds.back() + Floats(rows, w));
  return bounds;
}

PartitionedMlp::Blocks PartitionedMlp::InputOf(std::size_t share, const float* x) const {
  if (share == 0) return {x, {shares_[0].in}};
  return {outputs_[share - 1].data(), Widths(shares_[share - 1].layer)};
}

void PartitionedMlp::Forward(const Share& s, const float* params, const Blocks& input, int rows,
                             float* y) const {
  const float* block = input.data;
  int row = 0;  // of W: the first input unit of this block
  for (int w : input.widths) {
    math::Gemm(Trans::kNo, Trans::kNo, rows, s.cols, w, 1.0f, block, w,
               params + s.weight + Floats(row, s.cols), s.cols, row == 0 ? 0.0f : 1.0f, y, s.cols);
    block += Floats(rows, w);
    row += w;
  }
  math::AddBiasActivate(y, rows, s.cols, params + s.bias, s.activation);
}

void PartitionedMlp::Gradient(const Share& s, const Blocks& input, const float* delta, int rows,
                              bool accumulate, float* grad) const {
  const float beta = accumulate ? 1.0f : 0.0f;
  const float* block = input.data;
  int row = 0;
  for (int w : input.widths) {
    math::Gemm(Trans::kYes, Trans::kNo, w, s.cols, rows, 1.0f, block, w, delta, s.cols, beta,
               grad + s.weight + Floats(row, s.cols), s.cols);
    block += Floats(rows, w);
    row += w;
  }
  math::ColumnSums(delta, rows, s.cols, beta, grad + s.bias);
}

void PartitionedMlp::InputGradient(const Share& s, const float* params, const float* delta,
                                   int rows, const std::vector<int>& input_widths,
                                   float* dx) const {
  int row = 0;
  for (int w : input_widths) {
    math::Gemm(Trans::kNo, Trans::kYes, rows, w, s.cols, 1.0f, delta, s.cols,
               params + s.weight + Floats(row, s.cols), s.cols, 0.0f, dx, w);
    dx += Floats(rows, w);
    row += w;
  }
}

void PartitionedMlp::AddWeightDecay(const float* params, float weight_decay, float* grad) const {
  if (weight_decay == 0.0f) return;
  for (const Share& s : shares_) {
    const std::size_t count = Floats(s.in, s.cols);
    math::Axpy(weight_decay, {params + s.weight, count}, {grad + s.weight, count});
  }
}

model::LossValue PartitionedMlp::StageLoss(const float* out, const float* y, int rows,
                                           float scale, float* delta) const {
  const int outputs = model_.spec().outputs;
  const model::LossValue v = model::ComputeLoss(model_.spec().loss, out, y, rows, outputs, delta);
  if (delta != nullptr && scale != 1.0f) math::Scale(scale, {delta, Floats(rows, outputs)});
  return v;
}

Result<model::LossValue> PartitionedMlp::ForwardBackward(const float* params, const float* x,
                                                         const float* y, int rows,
                                                         float weight_decay, float* grad) {
  assert(rows <= capacity_);
  if (plan_.kind == PartitionKind::kTensor) return TensorPass(params, x, y, rows, weight_decay, grad);
  return PipelinePass(params, x, y, rows, weight_decay, grad);
}

Result<model::LossValue> PartitionedMlp::Evaluate(const float* params, const float* x,
                                                  const float* y, int rows) {
  assert(rows <= capacity_);
  if (plan_.kind == PartitionKind::kTensor) return TensorPass(params, x, y, rows, 0.0f, nullptr);
  return PipelineEvaluate(params, x, y, rows);
}

Result<double> PartitionedMlp::WeightDecayPenalty(const float* params, float weight_decay) {
  if (weight_decay == 0.0f) return 0.0;
  float sum = 0.0f;
  for (const Share& s : shares_) {
    sum += static_cast<float>(math::SquaredNorm({params + s.weight, Floats(s.in, s.cols)}));
  }
  if (Status st = exchange_.AllReduceSum({&sum, 1}); !st.ok()) return st;
  return 0.5 * weight_decay * static_cast<double>(sum);
}

Result<double> PartitionedMlp::SquaredNorm(std::span<const float> local_grad) {
  float sum = static_cast<float>(math::SquaredNorm(local_grad));
  if (Status st = exchange_.AllReduceSum({&sum, 1}); !st.ok()) return st;
  return static_cast<double>(sum);
}

Result<int> PartitionedMlp::AgreeStop(int wanted) {
  float largest = static_cast<float>(wanted);
  // The largest: a sum of each partition's value placed in its own slot.
  std::vector<float> slots(static_cast<std::size_t>(plan_.parts), 0.0f);
  slots[static_cast<std::size_t>(part_)] = largest;
  if (Status st = exchange_.AllReduceSum(slots); !st.ok()) return st;
  for (float v : slots) largest = std::max(largest, v);
  return static_cast<int>(largest);
}

std::optional<model::PartitionTraffic> PartitionedMlp::TakeTraffic() {
  const PartitionExchange::Waits w = exchange_.TakeWaits();
  return model::PartitionTraffic{w.receiving, w.sending, w.bytes_sent};
}

// Tensor: every layer's units computed here, then gathered; backward, the gradient of a layer's
// input reduce-scattered to the units' owners. `grad` null: forward and loss only.
Result<model::LossValue> PartitionedMlp::TensorPass(const float* params, const float* x,
                                                    const float* y, int rows, float weight_decay,
                                                    float* grad) {
  for (std::size_t i = 0; i < shares_.size(); ++i) {
    const Share& s = shares_[i];
    const std::vector<std::size_t> bounds = Bounds(Widths(s.layer), rows);
    Forward(s, params, InputOf(i, x), rows, outputs_[i].data() + bounds[part_]);
    if (Status st = exchange_.AllGather({outputs_[i].data(), bounds.back()}, bounds); !st.ok()) {
      return st;
    }
  }
  const Share& last = shares_.back();
  ToRowMajor(outputs_.back().data(), Widths(last.layer), rows, logits_.data());
  const model::LossValue value =
      StageLoss(logits_.data(), y, rows, 1.0f, grad != nullptr ? loss_grad_.data() : nullptr);
  if (grad == nullptr) return value;

  // This partition's columns of the gradient of the logits.
  float* delta = delta_a_.data();
  for (int r = 0; r < rows; ++r) {
    std::copy_n(loss_grad_.data() + Floats(r, last.out) + last.first_col, last.cols,
                delta + Floats(r, last.cols));
  }
  for (std::size_t i = shares_.size(); i-- > 0;) {
    const Share& s = shares_[i];
    Gradient(s, InputOf(i, x), delta, rows, false, grad);
    if (i == 0) break;
    const std::vector<int> widths = Widths(shares_[i - 1].layer);
    const std::vector<std::size_t> bounds = Bounds(widths, rows);
    InputGradient(s, params, delta, rows, widths, dx_.data());
    if (Status st = exchange_.ReduceScatter({dx_.data(), bounds.back()}, bounds); !st.ok()) {
      return st;
    }
    float* next = delta == delta_a_.data() ? delta_b_.data() : delta_a_.data();
    const std::size_t mine = bounds[part_ + 1] - bounds[part_];
    std::copy_n(dx_.data() + bounds[part_], mine, next);
    math::ActivationBackward(outputs_[i - 1].data() + bounds[part_], next, mine,
                             shares_[i - 1].activation);
    delta = next;
  }
  AddWeightDecay(params, weight_decay, grad);
  return value;
}

// Pipeline: GPipe's schedule over micro-batches. Forward messages are a micro-batch's outputs;
// backward ones the gradient of the receiver's outputs (before its activation), followed by the
// batch's loss sum and correct count.
Result<model::LossValue> PartitionedMlp::PipelinePass(const float* params, const float* x,
                                                      const float* y, int rows,
                                                      float weight_decay, float* grad) {
  const bool first = part_ == 0;
  const bool last = part_ + 1 == plan_.parts;
  const int in = shares_.front().in;
  const int out = shares_.back().out;
  const int micro = std::min(micro_batches_, rows);
  std::vector<int> offset(static_cast<std::size_t>(micro) + 1, 0);
  for (int m = 0; m < micro; ++m) offset[m + 1] = offset[m] + rows / micro + (m < rows % micro);
  const auto stage_input = [&](int m) {
    return first ? x + Floats(offset[m], in) : input_.data() + Floats(offset[m], in);
  };
  // The input of share i for micro-batch m (its rows of the share before, or the stage's input).
  const auto share_input = [&](std::size_t i, int m) -> Blocks {
    if (i == 0) return {stage_input(m), {in}};
    return {outputs_[i - 1].data() + Floats(offset[m], shares_[i - 1].out), {shares_[i].in}};
  };

  model::LossValue total;
  for (int m = 0; m < micro; ++m) {
    const int r = offset[m + 1] - offset[m];
    if (!first) {
      if (Status st = exchange_.RecvPrev({input_.data() + Floats(offset[m], in), Floats(r, in)});
          !st.ok()) {
        return st;
      }
    }
    for (std::size_t i = 0; i < shares_.size(); ++i) {
      const Share& s = shares_[i];
      Forward(s, params, share_input(i, m), r, outputs_[i].data() + Floats(offset[m], s.out));
    }
    const float* result = outputs_.back().data() + Floats(offset[m], out);
    if (!last) {
      if (Status st = exchange_.SendNext({result, Floats(r, out)}); !st.ok()) return st;
    } else {
      const model::LossValue v =
          StageLoss(result, y + offset[m], r, static_cast<float>(r) / static_cast<float>(rows),
                    loss_grad_.data() + Floats(offset[m], out));
      total.loss_sum += v.loss_sum;
      total.correct += v.correct;
    }
  }

  for (int m = micro; m-- > 0;) {
    const int r = offset[m + 1] - offset[m];
    float* delta = nullptr;
    if (last) {
      delta = loss_grad_.data() + Floats(offset[m], out);
    } else {
      const std::size_t n = Floats(r, out);
      if (Status st = exchange_.RecvNext({message_.data(), n + kLossFloats}); !st.ok()) return st;
      total = UnpackLoss(message_.data() + n);
      delta = message_.data();
      math::ActivationBackward(outputs_.back().data() + Floats(offset[m], out), delta, n,
                               shares_.back().activation);
    }
    for (std::size_t i = shares_.size(); i-- > 0;) {
      const Share& s = shares_[i];
      Gradient(s, share_input(i, m), delta, r, m + 1 < micro, grad);
      if (i == 0) break;
      float* next = delta == delta_a_.data() ? delta_b_.data() : delta_a_.data();
      InputGradient(s, params, delta, r, {s.in}, next);
      math::ActivationBackward(outputs_[i - 1].data() + Floats(offset[m], s.in), next,
                               Floats(r, s.in), shares_[i - 1].activation);
      delta = next;
    }
    if (!first) {
      const std::size_t n = Floats(r, in);
      InputGradient(shares_.front(), params, delta, r, {in}, dx_.data());
      PackLoss(total, dx_.data() + n);
      if (Status st = exchange_.SendPrev({dx_.data(), n + kLossFloats}); !st.ok()) return st;
    }
  }
  if (last) {
    float packed[kLossFloats];
    PackLoss(total, packed);
    total = UnpackLoss(packed);
  }
  AddWeightDecay(params, weight_decay, grad);
  return total;
}

// Pipeline evaluation: the batch forward in one piece; the last stage's loss travels back.
Result<model::LossValue> PartitionedMlp::PipelineEvaluate(const float* params, const float* x,
                                                          const float* y, int rows) {
  const bool first = part_ == 0;
  const bool last = part_ + 1 == plan_.parts;
  const int in = shares_.front().in;
  const float* stage_input = x;
  if (!first) {
    if (Status st = exchange_.RecvPrev({input_.data(), Floats(rows, in)}); !st.ok()) return st;
    stage_input = input_.data();
  }
  for (std::size_t i = 0; i < shares_.size(); ++i) {
    const Blocks input = i == 0 ? Blocks{stage_input, {in}}
                                : Blocks{outputs_[i - 1].data(), {shares_[i].in}};
    Forward(shares_[i], params, input, rows, outputs_[i].data());
  }
  float loss[kLossFloats] = {};
  model::LossValue value;
  if (last) {
    PackLoss(StageLoss(outputs_.back().data(), y, rows, 1.0f, nullptr), loss);
    value = UnpackLoss(loss);
  } else {
    const int out = shares_.back().out;
    if (Status st = exchange_.SendNext({outputs_.back().data(), Floats(rows, out)}); !st.ok()) {
      return st;
    }
    if (Status st = exchange_.RecvNext(loss); !st.ok()) return st;
    value = UnpackLoss(loss);
  }
  if (!first) {
    if (Status st = exchange_.SendPrev(loss); !st.ok()) return st;
  }
  return value;
}

}  // namespace dtrain::dist
