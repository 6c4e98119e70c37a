#include "core/compress/gradient_compressor.h"

#include <algorithm>
#include <string>
#include <utility>

#include "core/compress/host_sum_codec.h"
#include "core/compress/low_rank.h"
#include "core/compress/scoped_seconds.h"
#include "core/compress/value_messages.h"
#include "core/data/random.h"
#include "core/math/part_range.h"
#include "core/math/thread_team.h"

namespace dtrain::compress {
namespace {

template <typename T>
std::span<T> Of(std::span<T> values, const TensorPlan& t) {
  return values.subspan(t.tensor.offset, t.tensor.count());
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

}  // namespace

Status GradientExchange::GatherHostSums(std::span<float>, ChunkCodec&) {
  return Status::Error("this exchange does not sum within hosts");
}

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
    : plan_(std::move(plan)),
      settings_(settings),
      residual_(PlanFloats(plan_)),
      host_chunks_only_(plan_.size() + 1, false) {
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
  if (ExchangesByGather(settings_.method) && exchange.SumsWithinHost()) {
    return ExchangeHostSums(part, grad, exchange);
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
    MeanOfMessages(t.encoding, t.k, buffer_.data() + at, block, world, inverse_world, Of(grad, t),
                   top_k_);
    at += t.sent_floats;
  }
  return Status::Ok();
}

Status GradientCompressor::ExchangeHostSums(PlanPart part, std::span<float> grad,
                                            GradientExchange& exchange) {
  const std::span<const TensorPlan> plan = Tensors(part);
  const std::size_t begin = plan.empty() ? 0 : plan.front().tensor.offset;
  const std::span<float> range = grad.subspan(begin, PlanFloats(plan));
  HostSumCodec codec(plan, settings_.fraction, 1.0f / static_cast<float>(exchange.world()),
                     residual_, top_k_, stats_.seconds, !host_chunks_only_[part.first]);
  if (Status s = exchange.GatherHostSums(range, codec); !s.ok()) return s;
  host_chunks_only_[part.first] = true;
  stats_.raw_bytes += range.size() * sizeof(float);
  stats_.sent_bytes += codec.encoded_floats() * sizeof(float);
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
    EncodeValues(t.encoding, t.k, Of(grad, t), Of(std::span(residual_), t), top_k_,
                 messages.subspan(at, t.sent_floats));
    at += t.sent_floats;
  }
}

std::vector<std::span<float>> GradientCompressor::StateVectors() {
  // The caller may overwrite the residual: the next gather of host sums folds it in first.
  std::fill(host_chunks_only_.begin(), host_chunks_only_.end(), false);
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
