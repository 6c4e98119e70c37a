#include "core/compress/host_sum_codec.h"

#include <algorithm>

#include "core/compress/scoped_seconds.h"

namespace dtrain::compress {

HostSumCodec::HostSumCodec(std::span<const TensorPlan> plan, double fraction, float inverse_world,
                           std::span<float> residual, std::vector<std::uint32_t>& scratch,
                           double& seconds, bool fold)
    : plan_(plan),
      begin_(plan.empty() ? 0 : plan.front().tensor.offset),
      fraction_(fraction),
      inverse_world_(inverse_world),
      residual_(residual),
      scratch_(scratch),
      seconds_(seconds),
      fold_(fold) {}

void HostSumCodec::BeforeSum(std::span<float> data, math::PartRange chunk) {
  if (!fold_) return;
  ScopedSeconds timer(seconds_);
  const std::span<float> residual = residual_.subspan(begin_, data.size());
  // Adding a zero is skipped: it could turn a -0 gradient into +0.
  const auto fold = [&](std::size_t from, std::size_t to) {
    for (std::size_t i = from; i < to; ++i) {
      if (residual[i] == 0.0f) continue;
      data[i] += residual[i];
      residual[i] = 0.0f;
    }
  };
  fold(0, chunk.begin);
  fold(chunk.end, data.size());
}

template <typename Visit>
void HostSumCodec::ForEachPiece(math::PartRange chunk, Visit visit) const {
  std::size_t at = 0;
  for (const TensorPlan& t : plan_) {
    const std::size_t first = t.tensor.offset - begin_;
    const math::PartRange piece{std::max(chunk.begin, first),
                                std::min(chunk.end, first + t.tensor.count())};
    if (piece.begin >= piece.end) continue;
    const MessageSize size = SizeOfMessage(t.encoding, piece.end - piece.begin, fraction_);
    visit(t, piece, size, at);
    at += size.floats;
  }
}

std::size_t HostSumCodec::MessageFloats(math::PartRange chunk) const {
  std::size_t floats = 0;
  ForEachPiece(chunk, [&](const TensorPlan&, math::PartRange, MessageSize size, std::size_t) {
    floats += size.floats;
  });
  return floats;
}

void HostSumCodec::Encode(std::span<const float> sum, math::PartRange chunk,
                          std::span<float> message) {
  ScopedSeconds timer(seconds_);
  encoded_floats_ = message.size();
  ForEachPiece(chunk,
               [&](const TensorPlan& t, math::PartRange piece, MessageSize size, std::size_t at) {
                 const std::size_t count = piece.end - piece.begin;
                 EncodeValues(t.encoding, size.k, sum.subspan(piece.begin, count),
                              residual_.subspan(begin_ + piece.begin, count), scratch_,
                              message.subspan(at, size.floats));
               });
}

void HostSumCodec::Decode(std::span<const float> messages, std::size_t stride, std::size_t hosts,
                          math::PartRange chunk, std::span<float> out) {
  ScopedSeconds timer(seconds_);
  ForEachPiece(
      chunk, [&](const TensorPlan& t, math::PartRange piece, MessageSize size, std::size_t at) {
        MeanOfMessages(t.encoding, size.k, messages.data() + at, stride, hosts, inverse_world_,
                       out.subspan(piece.begin, piece.end - piece.begin), scratch_);
      });
}

}  // namespace dtrain::compress
