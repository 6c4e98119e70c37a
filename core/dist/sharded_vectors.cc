#include "core/dist/sharded_vectors.h"

#include "core/dist/sandblaster_messages.h"

namespace dtrain::dist {

ShardedVectors::ShardedVectors(std::vector<Link*> shards, std::size_t num_params,
                               ShardedVectorsOptions options, RunPass run_pass)
    : shards_(std::move(shards)),
      ranges_(ShardRanges(num_params, static_cast<int>(shards_.size()))),
      options_(options),
      run_pass_(std::move(run_pass)) {}

Result<std::vector<double>> ShardedVectors::ToAll(const SbHeader& h, bool reply) {
  const Deadline deadline = Clock::now() + options_.timeout;
  for (Link* shard : shards_) {
    if (Status s = SendSb(*shard, h, {}, deadline); !s.ok()) return s;
  }
  std::vector<double> values;
  if (!reply) return values;
  for (Link* shard : shards_) {
    Result<SbHeader> answer = RecvSb(*shard, SbReply(h.kind), deadline);
    if (!answer.ok()) return answer.status();
    values.push_back(answer.value().value);
  }
  return values;
}

Result<double> ShardedVectors::Dot(int a, int b) {
  Result<std::vector<double>> parts = ToAll(
      {.kind = SbKind::kDot, .a = static_cast<std::uint32_t>(a), .b = static_cast<std::uint32_t>(b)},
      true);
  if (!parts.ok()) return parts.status();
  double sum = 0.0;
  for (double part : parts.value()) sum += part;
  return sum;
}

Status ShardedVectors::Axpy(double alpha, int x, int y) {
  return ToAll({.kind = SbKind::kAxpy,
                .a = static_cast<std::uint32_t>(x),
                .b = static_cast<std::uint32_t>(y),
                .value = alpha},
               false)
      .status();
}

Status ShardedVectors::Scale(double alpha, int v) {
  return ToAll({.kind = SbKind::kScale, .a = static_cast<std::uint32_t>(v), .value = alpha}, false)
      .status();
}

Status ShardedVectors::Copy(int from, int to) {
  return ToAll({.kind = SbKind::kCopy,
                .a = static_cast<std::uint32_t>(from),
                .b = static_cast<std::uint32_t>(to)},
               false)
      .status();
}

Result<double> ShardedVectors::Evaluate(int at, int grad) {
  while (true) {
    ++pass_;
    SbHeader begin{.kind = SbKind::kBeginPass, .a = static_cast<std::uint32_t>(at)};
    begin.pass = pass_;
    if (Result<std::vector<double>> ready = ToAll(begin, true); !ready.ok()) return ready.status();
    Result<PassTotals> totals = run_pass_(pass_);
    if (!totals.ok()) return totals.status();
    last_pass_ = totals.value();
    if (!last_pass_.restart) break;
  }
  SbHeader finish{.kind = SbKind::kFinishPass,
                  .a = static_cast<std::uint32_t>(at),
                  .b = static_cast<std::uint32_t>(grad),
                  .value = options_.weight_decay};
  finish.pass = pass_;
  finish.count = options_.rows;
  Result<std::vector<double>> penalties = ToAll(finish, true);
  if (!penalties.ok()) return penalties.status();
  double f = last_pass_.loss_sum / static_cast<double>(options_.rows);
  for (double part : penalties.value()) f += part;
  return f;
}

Status ShardedVectors::Load(int vector, std::span<const float> whole) {
  const Deadline deadline = Clock::now() + options_.timeout;
  for (std::size_t s = 0; s < shards_.size(); ++s) {
    const SbHeader h{.kind = SbKind::kLoad, .a = static_cast<std::uint32_t>(vector)};
    const std::span<const float> slice = whole.subspan(ranges_[s].begin, ranges_[s].size());
    if (Status st = SendSb(*shards_[s], h, slice, deadline); !st.ok()) return st;
  }
  return Status::Ok();
}

Status ShardedVectors::Gather(int vector, std::span<float> whole) {
  const Deadline deadline = Clock::now() + options_.timeout;
  if (Status s = ToAll({.kind = SbKind::kSnapshot, .a = static_cast<std::uint32_t>(vector)}, false)
                     .status();
      !s.ok()) {
    return s;
  }
  for (std::size_t s = 0; s < shards_.size(); ++s) {
    Result<SbHeader> h = RecvSb(*shards_[s], SbReply(SbKind::kSnapshot), deadline);
    if (!h.ok()) return h.status();
    Status got = shards_[s]->Recv(SbData(SbReply(SbKind::kSnapshot)),
                                  whole.subspan(ranges_[s].begin, ranges_[s].size()), deadline);
    if (!got.ok()) return got;
  }
  return Status::Ok();
}

Status ShardedVectors::Goodbye() { return ToAll({.kind = SbKind::kGoodbye}, false).status(); }

}  // namespace dtrain::dist
