#include "core/dist/push_codec.h"

#include <algorithm>
#include <bit>

#include "core/compress/bf16.h"
#include "core/compress/top_k.h"

namespace dtrain::dist {

std::vector<compress::TensorPlan> PlanPushes(std::span<const ShardRange> ranges,
                                             const compress::Settings& settings) {
  std::vector<model::ParamTensor> slices;
  for (std::size_t k = 0; k < ranges.size(); ++k) {
    slices.push_back({.offset = ranges[k].begin,
                      .rows = 1,
                      .cols = ranges[k].size(),
                      .name = "shard " + std::to_string(k) + " of " +
                              std::to_string(ranges.size()) + " " +
                              FormatRange(ranges[k].begin, ranges[k].end)});
  }
  return compress::PlanCompression(slices, settings);
}

void AnnouncePushes(const compress::TensorPlan& slice, PsHeader& hello) {
  switch (slice.encoding) {
    case compress::Encoding::kBf16:
      hello.flags |= kPsBf16Pushes;
      return;
    case compress::Encoding::kSparse:
      hello.flags |= kPsSparsePushes;
      hello.rows = static_cast<std::uint32_t>(slice.k);
      return;
    case compress::Encoding::kRaw:
    case compress::Encoding::kLowRank:  // never planned for pushes (PowerSGD is refused)
      return;
  }
}

Result<PushDecoder> PushDecoder::FromHello(const PsHeader& hello, std::size_t size) {
  PushDecoder d;
  d.encoding_ = hello.flags & (kPsBf16Pushes | kPsSparsePushes);
  switch (d.encoding_) {
    case 0:
      return d;
    case kPsBf16Pushes:
      d.message_.resize(compress::PackedFloats(size));
      return d;
    case kPsSparsePushes:
      if (hello.rows < 1 || hello.rows > size) {
        return Status::Error("compressed pushes of " + std::to_string(hello.rows) +
                             " pairs for a slice of " + std::to_string(size) + " floats");
      }
      d.pairs_ = hello.rows;
      d.message_.resize(2 * d.pairs_);
      return d;
    default:
      return Status::Error("a hello announcing both bf16 and sparse pushes");
  }
}

void PushDecoder::Echo(PsHeader& reply) const {
  reply.flags |= encoding_;
  if (encoding_ == kPsSparsePushes) reply.rows = static_cast<std::uint32_t>(pairs_);
}

Status PushDecoder::Receive(Link& link, std::uint32_t data_tag, const PsHeader& push,
                            std::span<float> out, Deadline deadline) {
  if ((push.flags & kPsEncodedPush) == 0) return link.Recv(data_tag, out, deadline);
  if (encoding_ == 0) return Status::Error("an encoded push where the hello announced none");
  if (Status got = link.Recv(data_tag, message_, deadline); !got.ok()) return got;
  return Decode(message_, out);
}

Status PushDecoder::Decode(std::span<const float> message, std::span<float> out) const {
  if (encoding_ == 0 || message.size() != message_.size()) {
    return Status::Error("an encoded push of " + std::to_string(message.size()) +
                         " floats where the hello announced " + std::to_string(message_.size()));
  }
  if (encoding_ == kPsBf16Pushes) {
    if (compress::PackedFloats(out.size()) != message.size()) {
      return Status::Error("bf16 pushes of " + std::to_string(message.size()) +
                           " floats for a slice of " + std::to_string(out.size()));
    }
    compress::UnpackBf16(message, out);
    return Status::Ok();
  }
  for (std::size_t j = 0; j < pairs_; ++j) {
    const auto index = std::bit_cast<std::uint32_t>(message[j]);
    if (index >= out.size()) {
      return Status::Error("a compressed push's pair " + std::to_string(j) + " has index " +
                           std::to_string(index) + ", outside the slice of " +
                           std::to_string(out.size()) + " floats");
    }
  }
  std::ranges::fill(out, 0.0f);
  compress::AddSparse(message, pairs_, 1.0f, out);
  return Status::Ok();
}

}  // namespace dtrain::dist
