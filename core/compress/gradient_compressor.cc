#include "core/compress/gradient_compressor.h"

#include <algorithm>
#include <bit>
#include <chrono>
#include <string>
#include <utility>

#include "core/compress/bf16.h"
#include "core/compress/low_rank.h"
#include "core/compress/top_k.h"
#include "core/data/random.h"
#include "core/math/part_range.h"
#include "core/math/thread_team.h"

namespace dtrain::compress {
namespace {

// Adds the seconds of its scope to a total: the encoding and decoding of a step, not its exchange.
class ScopedSeconds {
 public:
  explicit ScopedSeconds(double& total) : total_(total) {}
  ScopedSeconds(const ScopedSeconds&) = delete;
  ScopedSeconds& operator=(const ScopedSeconds&) = delete;
  ~ScopedSeconds() {
    total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  double& total_;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

template <typename T>
std::span<T> Of(std::span<T> values, const TensorPlan& t) {
  return values.subspan(t.tensor.offset, t.tensor.count());
}

void AddInto(std::span<const float> in, std::span<float> out) {
  for (std::size_t i = 0; i < out.size(); ++i) out[i] += in[i];
}

std::size_t Rank(const TensorPlan& t) { return static_cast<std::size_t>(t.rank); }

// A step's buffer under PowerSGD: [P of each kLowRank tensor, then every kRaw tensor's values]
// (the first Mean), then [Q' of each kLowRank tensor] (the second), then this replica's own Q'
// of each (what the second Mean replaces).
struct LowRankBuffer {
  std::span<float> ps, raws, qs, own_qs;
};

LowRankBuffer SplitLowRankBuffer(std::span<const TensorPlan> plan, std::vector<float>& buffer) {
  std::size_t p_floats = 0, raw_floats = 0, q_floats = 0;
  for (const TensorPlan& t : plan) {
    if (t.encoding == Encoding::kLowRank) {
      p_floats += t.tensor.rows * Rank(t);
      q_floats += t.tensor.cols * Rank(t);
    } else {
      raw_floats += t.tensor.count();
    }
  }
  buffer.resize(p_floats + raw_floats + 2 * q_floats);
  const std::span<float> all(buffer);
  return {.ps = all.first(p_floats),
          .raws = all.subspan(p_floats, raw_floats),
          .qs = all.subspan(p_floats + raw_floats, q_floats),
          .own_qs = all.subspan(p_floats + raw_floats + q_floats)};
}

// A kLowRank tensor in a step: the index-th of them, its P (rows x rank), its Q' (cols x rank)
// and this replica's own Q'.
struct LowRankTensor {
  const TensorPlan& plan;
  std::size_t index;
  std::span<float> p, q, own_q;
  std::size_t rows() const { return plan.tensor.rows; }
  std::size_t cols() const { return plan.tensor.cols; }
  std::size_t rank() const { return Rank(plan); }
};

template <typename Visit>
void ForEachLowRank(std::span<const TensorPlan> plan, const LowRankBuffer& b, Visit visit) {
  std::size_t index = 0, p_at = 0, q_at = 0;
  for (const TensorPlan& t : plan) {
    if (t.encoding != Encoding::kLowRank) continue;
    const std::size_t p_floats = t.tensor.rows * Rank(t), q_floats = t.tensor.cols * Rank(t);
    visit(LowRankTensor{t, index++, b.ps.subspan(p_at, p_floats), b.qs.subspan(q_at, q_floats),
                        b.own_qs.subspan(q_at, q_floats)});
    p_at += p_floats;
    q_at += q_floats;
  }
}

// part(range) for each of the team's parts of [0, count), at once (without a team, the whole
// range on this thread).
template <typename Part>
void Split(math::ThreadTeam* team, std::size_t count, const Part& part) {
  if (team == nullptr) {
    part(math::PartRange{0, count});
    return;
  }
  team->Run([&](int i) { part(math::PartOf(count, team->size(), i)); });
}

// Rows [rows.begin, rows.end) of a row-major matrix with `cols` columns.
template <typename T>
std::span<T> Rows(std::span<T> values, std::size_t cols, math::PartRange rows) {
  return values.subspan(rows.begin * cols, (rows.end - rows.begin) * cols);
}

// The kRaw tensors' values of grad into raws, tensor after tensor (to_raws), or back.
void CopyRaw(std::span<const TensorPlan> plan, std::span<float> grad, std::span<float> raws,
             bool to_raws) {
  std::size_t at = 0;
  for (const TensorPlan& t : plan) {
    if (t.encoding == Encoding::kLowRank) continue;
    const std::span<float> section = raws.subspan(at, t.tensor.count());
    if (to_raws) {
      std::ranges::copy(Of(grad, t), section.begin());
    } else {
      std::ranges::copy(section, Of(grad, t).begin());
    }
    at += t.tensor.count();
  }
}

// Before the first Mean: M = G + E into the residual (E = what it holds, less the last step's
// deferred product), P = M Q (rows split among the team).
void WriteP(std::span<const TensorPlan> plan, const LowRankBuffer& b, std::span<const float> grad,
            std::span<float> residual, std::span<const std::vector<float>> qs,
            std::span<DeferredFactors> deferred, math::ThreadTeam* team) {
  ForEachLowRank(plan, b, [&](const LowRankTensor& t) {
    DeferredFactors& last = deferred[t.index];
    Split(team, t.rows(), [&](math::PartRange rows) {
      const DeferredProduct subtract =
          last.pending
              ? DeferredProduct{Rows(std::span<const float>(last.p), t.rank(), rows), last.own_q}
              : DeferredProduct{};
      AddAndMultiplyByQ(Rows(Of(grad, t.plan), t.cols(), rows),
                        Rows(Of(residual, t.plan), t.cols(), rows), rows.end - rows.begin, t.cols(),
                        qs[t.index], t.rank(), Rows(t.p, t.rank(), rows), subtract);
    });
    last.pending = false;
  });
}

// After it, on the mean P: P orthonormal, and this replica's own Q' = M^T P (kept aside, and
// the second Mean's input; Q's rows split among the team).
void WriteOwnQ(std::span<const TensorPlan> plan, const LowRankBuffer& b,
               std::span<const float> residual, math::ThreadTeam* team) {
  ForEachLowRank(plan, b, [&](const LowRankTensor& t) {
    Orthonormalize(t.p, t.rows(), t.rank());
    Split(team, t.cols(), [&](math::PartRange columns) {
      MultiplyColumnsTransposedByP(Of(residual, t.plan), t.rows(), t.cols(), columns, t.p, t.rank(),
                                   t.own_q);
    });
    std::ranges::copy(t.own_q, t.q.begin());
  });
}

// After the second Mean: the step's gradient P Q'^T from the mean Q', which the next step's Q
// starts from (rows split among the team), and P with this replica's own Q' kept as the deferred
// product of the residual M - P (own Q')^T.
void WriteMeanProduct(std::span<const TensorPlan> plan, const LowRankBuffer& b,
                      std::span<float> grad, std::span<std::vector<float>> qs,
                      std::span<DeferredFactors> deferred, math::ThreadTeam* team) {
  ForEachLowRank(plan, b, [&](const LowRankTensor& t) {
    Split(team, t.rows(), [&](math::PartRange rows) {
      WriteProduct(Rows(t.p, t.rank(), rows), t.q, rows.end - rows.begin, t.cols(), t.rank(),
                   Rows(Of(grad, t.plan), t.cols(), rows));
    });
    std::ranges::copy(t.q, qs[t.index].begin());
    DeferredFactors& last = deferred[t.index];
    std::ranges::copy(t.p, last.p.begin());
    std::ranges::copy(t.own_q, last.own_q.begin());
    last.pending = true;
  });
}

// out = (the sum over replicas, in rank order from 0.0f, of value(replica, i)) * inverse, value by
// value: one pass over out.
template <typename ValueOf>
void MeanOver(std::size_t world, float inverse, std::span<float> out, ValueOf value) {
  for (std::size_t i = 0; i < out.size(); ++i) {
    float sum = 0.0f;
    for (std::size_t replica = 0; replica < world; ++replica) sum += value(replica, i);
    out[i] = sum * inverse;
  }
}

// out = the mean of every replica's sparse message (world of them, `stride` floats apart): zeros,
// each replica's pairs added in rank order, then each value that any pair reached scaled once
// (a zero scaled stays itself).
void MeanOfSparse(const TensorPlan& t, std::span<const float> messages, std::size_t stride,
                  std::size_t world, float inverse, std::span<float> out,
                  std::vector<std::uint32_t>& reached) {
  std::ranges::fill(out, 0.0f);
  reached.clear();
  for (std::size_t replica = 0; replica < world; ++replica) {
    const std::span<const float> message = messages.subspan(replica * stride, t.sent_floats);
    AddSparse(message, t.k, 1.0f, out);
    for (std::size_t j = 0; j < t.k; ++j)
      reached.push_back(std::bit_cast<std::uint32_t>(message[j]));
  }
  std::ranges::sort(reached);
  const auto last = std::unique(reached.begin(), reached.end());
  for (auto it = reached.begin(); it != last && *it < out.size(); ++it) out[*it] *= inverse;
}

}  // namespace

Result<PlanPart> PartOf(std::span<const TensorPlan> plan, std::size_t begin, std::size_t end) {
  PlanPart part;
  while (part.first < plan.size() && plan[part.first].tensor.offset < begin) ++part.first;
  std::size_t at = begin;
  while (part.first + part.count < plan.size() && at < end &&
         plan[part.first + part.count].tensor.offset == at) {
    at += plan[part.first + part.count].tensor.count();
    ++part.count;
  }
  if (at != end || (part.first < plan.size() && plan[part.first].tensor.offset != begin)) {
    return Status::Error("floats [" + std::to_string(begin) + ", " + std::to_string(end) +
                         ") are not whole tensors of the compression plan");
  }
  return part;
}

GradientCompressor::GradientCompressor(std::vector<TensorPlan> plan, const Settings& settings,
                                       std::uint64_t seed)
    : plan_(std::move(plan)), settings_(settings), residual_(PlanFloats(plan_)) {
  for (std::size_t i = 0; i < plan_.size(); ++i) {
    const TensorPlan& t = plan_[i];
    if (t.encoding != Encoding::kLowRank) continue;
    q_.emplace_back(t.tensor.cols * Rank(t));
    InitialQ(data::MixSeed(seed, i), q_.back());
    deferred_.push_back({.p = std::vector<float>(t.tensor.rows * Rank(t)),
                         .own_q = std::vector<float>(t.tensor.cols * Rank(t))});
  }
}

Status GradientCompressor::Exchange(std::int64_t step, std::span<float> grad,
                                    GradientExchange& exchange) {
  return ExchangePart(step, grad, {0, plan_.size()}, exchange);
}

Status GradientCompressor::ExchangePart(std::int64_t step, std::span<float> grad, PlanPart part,
                                        GradientExchange& exchange) {
  const std::span<const TensorPlan> tensors = Tensors(part);
  if (settings_.method == Method::kNone || step < settings_.warmup_steps) {
    const std::size_t begin = tensors.empty() ? 0 : tensors.front().tensor.offset;
    return exchange.Mean(grad.subspan(begin, PlanFloats(tensors)));
  }
  Status status = ExchangesByGather(settings_.method) ? ExchangeGathered(part, grad, exchange)
                                                      : ExchangeLowRank(part, grad, exchange);
  if (status.ok()) {
    stats_.raw_bytes += PlanFloats(tensors) * sizeof(float);
    stats_.sent_bytes += PlanSentFloats(tensors) * sizeof(float);
  }
  return status;
}

Status GradientCompressor::ExchangeLowRank(PlanPart part, std::span<float> grad,
                                           GradientExchange& exchange) {
  const std::span<const TensorPlan> plan = Tensors(part);
  // The part's Qs: those of its kLowRank tensors, after the ones of the tensors before it.
  const auto before = static_cast<std::size_t>(std::ranges::count(
      std::span(plan_).first(part.first), Encoding::kLowRank, &TensorPlan::encoding));
  const std::span<std::vector<float>> qs = std::span(q_).subspan(before);
  const LowRankBuffer b = SplitLowRankBuffer(plan, buffer_);
  {
    ScopedSeconds timer(stats_.seconds);
    WriteP(plan, b, grad, residual_, qs, std::span(deferred_).subspan(before), team_);
    CopyRaw(plan, grad, b.raws, /*to_raws=*/true);
  }
  if (Status s = exchange.Mean(std::span(buffer_).first(b.ps.size() + b.raws.size())); !s.ok()) {
    return s;
  }
  {
    ScopedSeconds timer(stats_.seconds);
    WriteOwnQ(plan, b, residual_, team_);
  }
  // A part of raw tensors only has no factors to average.
  if (Status s = b.qs.empty() ? Status::Ok() : exchange.Mean(b.qs); !s.ok()) return s;
  ScopedSeconds timer(stats_.seconds);
  WriteMeanProduct(plan, b, grad, qs, std::span(deferred_).subspan(before), team_);
  CopyRaw(plan, grad, b.raws, /*to_raws=*/false);
  return Status::Ok();
}

// The buffer holds world blocks of the part's PlanSentFloats floats: block r is replica r's
// messages, tensor by tensor in plan order.
Status GradientCompressor::ExchangeGathered(PlanPart part, std::span<float> grad,
                                            GradientExchange& exchange) {
  const std::span<const TensorPlan> plan = Tensors(part);
  const std::size_t block = PlanSentFloats(plan);
  const auto world = static_cast<std::size_t>(exchange.world());
  buffer_.resize(block * world);
  EncodePart(part, grad,
             std::span(buffer_).subspan(static_cast<std::size_t>(exchange.rank()) * block, block));
  if (Status s = exchange.Gather(buffer_); !s.ok()) return s;
  ScopedSeconds timer(stats_.seconds);
  const float inverse_world = 1.0f / static_cast<float>(world);
  std::size_t at = 0;
  for (const TensorPlan& t : plan) {
    const std::span<float> out = Of(grad, t);
    const float* messages = buffer_.data() + at;  // replica r's at messages + r * block
    switch (t.encoding) {
      case Encoding::kRaw:
        MeanOver(world, inverse_world, out,
                 [&](std::size_t r, std::size_t i) { return messages[r * block + i]; });
        break;
      case Encoding::kBf16:
        MeanOver(world, inverse_world, out, [&](std::size_t r, std::size_t i) {
          return UnpackBf16(messages[r * block + i / 2], i % 2);
        });
        break;
      case Encoding::kSparse:
        MeanOfSparse(t, std::span(buffer_).subspan(at), block, world, inverse_world, out, top_k_);
        break;
      case Encoding::kLowRank:  // planned only under powersgd, which exchanges by Means
        break;
    }
    at += t.sent_floats;
  }
  return Status::Ok();
}

void GradientCompressor::Encode(std::span<const float> grad, std::span<float> messages) {
  EncodePart({0, plan_.size()}, grad, messages);
}

void GradientCompressor::EncodePart(PlanPart part, std::span<const float> grad,
                                    std::span<float> messages) {
  ScopedSeconds timer(stats_.seconds);
  std::size_t at = 0;
  for (const TensorPlan& t : Tensors(part)) {
    EncodeMessage(t, Of(grad, t), messages.subspan(at, t.sent_floats));
    at += t.sent_floats;
  }
}

void GradientCompressor::EncodeMessage(const TensorPlan& t, std::span<const float> grad,
                                       std::span<float> message) {
  const std::span<float> m = Of(std::span(residual_), t);
  switch (t.encoding) {
    case Encoding::kRaw:
      std::ranges::copy(grad, message.begin());
      return;
    case Encoding::kBf16:
      PackBf16KeepingResidual(grad, m, message);
      return;
    case Encoding::kSparse:
      AddInto(grad, m);
      top_k_.resize(t.k);
      SelectTopK(m, top_k_);
      WriteSparse(m, top_k_, message);
      for (const std::uint32_t index : top_k_) m[index] = 0.0f;
      return;
    case Encoding::kLowRank:  // planned only under powersgd, which exchanges by Means
      return;
  }
}

std::vector<std::span<float>> GradientCompressor::StateVectors() {
  // The residuals' deferred products first: the state a checkpoint keeps is the whole residual.
  std::size_t index = 0;
  for (const TensorPlan& t : plan_) {
    if (t.encoding != Encoding::kLowRank) continue;
    DeferredFactors& last = deferred_[index++];
    if (!last.pending) continue;
    AddProduct(last.p, last.own_q, t.tensor.rows, t.tensor.cols, Rank(t), -1.0f,
               Of(std::span(residual_), t));
    last.pending = false;
  }
  std::vector<std::span<float>> states{std::span(residual_)};
  for (std::vector<float>& q : q_) states.emplace_back(q);
  return states;
}

}  // namespace dtrain::compress
