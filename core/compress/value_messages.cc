#include "core/compress/value_messages.h"

#include <algorithm>
#include <bit>

#include "core/compress/bf16.h"
#include "core/compress/top_k.h"
#include "core/math/elementwise.h"
#include "core/math/vector_width.h"

namespace dtrain::compress {
namespace {

DTRAIN_AT_VECTOR_WIDTH
void AddInto(const float* in, std::size_t n, float* out) {
  for (std::size_t i = 0; i < n; ++i) out[i] += in[i];
}
void AddInto(std::span<const float> in, std::span<float> out) {
  AddInto(in.data(), out.size(), out.data());
}

// Blocks of a mean's values that stay in the L1 cache while every sender's values are added.
constexpr std::size_t kBlock = 4096;  // even: a block's bf16 values start at a slot

// out = (the sum over `senders`, in sender order from 0.0f, of their values) * inverse, value by
// value; add(sender, first, block) adds the sender's values [first, first + block.size()) into
// the block of out that starts at `first`. Block by block, so that out stays in cache.
template <typename AddSender>
void MeanInBlocks(std::size_t senders, float inverse, std::span<float> out, AddSender add) {
  for (std::size_t first = 0; first < out.size(); first += kBlock) {
    const std::span<float> block = out.subspan(first, std::min(kBlock, out.size() - first));
    std::ranges::fill(block, 0.0f);
    for (std::size_t sender = 0; sender < senders; ++sender) add(sender, first, block);
    math::Scale(inverse, block);
  }
}

// out = the mean of every replica's sparse message of k pairs (world of them, `stride` floats
// apart): zeros, each replica's pairs added in rank order, then each value that any pair reached
// scaled once (a zero scaled stays itself).
void MeanOfSparse(std::size_t k, const float* messages, std::size_t stride, std::size_t world,
                  float inverse, std::span<float> out, std::vector<std::uint32_t>& reached) {
  std::ranges::fill(out, 0.0f);
  reached.clear();
  for (std::size_t replica = 0; replica < world; ++replica) {
    const std::span<const float> message(messages + replica * stride, 2 * k);
    AddSparse(message, k, 1.0f, out);
    for (std::size_t j = 0; j < k; ++j) reached.push_back(std::bit_cast<std::uint32_t>(message[j]));
  }
  std::ranges::sort(reached);
  const auto last = std::unique(reached.begin(), reached.end());
  for (auto it = reached.begin(); it != last && *it < out.size(); ++it) out[*it] *= inverse;
}

}  // namespace

MessageSize SizeOfMessage(Encoding encoding, std::size_t count, double fraction) {
  switch (encoding) {
    case Encoding::kBf16:
      return {PackedFloats(count), 0};
    case Encoding::kSparse: {
      const std::size_t k = SparseValues(count, fraction);
      return {2 * k, k};
    }
    case Encoding::kRaw:
    case Encoding::kLowRank:
      break;
  }
  return {count, 0};
}

void MeanOfMessages(Encoding encoding, std::size_t k, const float* messages, std::size_t stride,
                    std::size_t senders, float inverse, std::span<float> out,
                    std::vector<std::uint32_t>& scratch) {
  switch (encoding) {
    case Encoding::kRaw:
      MeanInBlocks(senders, inverse, out,
                   [&](std::size_t s, std::size_t first, std::span<float> block) {
                     AddInto({messages + s * stride + first, block.size()}, block);
                   });
      return;
    case Encoding::kBf16:
      MeanInBlocks(
          senders, inverse, out, [&](std::size_t s, std::size_t first, std::span<float> block) {
            AddUnpackedBf16({messages + s * stride + first / 2, PackedFloats(block.size())}, block);
          });
      return;
    case Encoding::kSparse:
      MeanOfSparse(k, messages, stride, senders, inverse, out, scratch);
      return;
    case Encoding::kLowRank:  // planned only under powersgd, which exchanges by Means
      return;
  }
}

void EncodeValues(Encoding encoding, std::size_t k, std::span<const float> grad,
                  std::span<float> residual, std::vector<std::uint32_t>& scratch,
                  std::span<float> message) {
  switch (encoding) {
    case Encoding::kRaw:
      std::ranges::copy(grad, message.begin());
      return;
    case Encoding::kBf16:
      PackBf16KeepingResidual(grad, residual, message);
      return;
    case Encoding::kSparse:
      AddInto(grad, residual);
      scratch.resize(k);
      SelectTopK(residual, scratch);
      WriteSparse(residual, scratch, message);
      for (const std::uint32_t index : scratch) residual[index] = 0.0f;
      return;
    case Encoding::kLowRank:  // planned only under powersgd, which exchanges by Means
      return;
  }
}

}  // namespace dtrain::compress
