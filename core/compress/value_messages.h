// One tensor's message under a method that gathers every replica's values (bf16, topk; raw
// tensors travel beside them), and the mean of several replicas' messages — what a compressor
// sends and decodes, for a whole tensor or a piece of one (a chunk of a host's sum).
//
//   MessageSize size = SizeOfMessage(Encoding::kSparse, count, fraction);   // {2k floats, k}
//   EncodeValues(Encoding::kSparse, size.k, grad, residual, scratch, message);
//   MeanOfMessages(Encoding::kSparse, size.k, gathered.data(), stride, world, 1.0f / world, out,
//                  scratch);
//
// Pure functions of their inputs: the same bits on every CPU, and a mean's sums in sender order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "core/compress/compression_plan.h"

namespace dtrain::compress {

// The floats of a message of `count` values, and the values a sparse one sends: count (kRaw),
// ceil(count / 2) (kBf16), 2k with k = min(count, max(1, ceil(fraction * count))) (kSparse, the
// plan's k for a whole tensor).
struct MessageSize {
  std::size_t floats = 0, k = 0;
};
MessageSize SizeOfMessage(Encoding encoding, std::size_t count, double fraction);

// message = the values grad + residual in `encoding` (k of them with their indices, for kSparse),
// leaving in residual what the message leaves out (kRaw: grad as it is, the residual untouched).
// `scratch` holds a selection; kLowRank writes nothing (PowerSGD's factors are averaged).
void EncodeValues(Encoding encoding, std::size_t k, std::span<const float> grad,
                  std::span<float> residual, std::vector<std::uint32_t>& scratch,
                  std::span<float> message);

// out = the sum of `senders` messages of `encoding` for out's values (k pairs for kSparse), sender
// s's at messages + s * stride, in sender order from 0.0f, times `inverse`. A sparse mean scales
// only the values that some pair reached (a zero stays itself).
void MeanOfMessages(Encoding encoding, std::size_t k, const float* messages, std::size_t stride,
                    std::size_t senders, float inverse, std::span<float> out,
                    std::vector<std::uint32_t>& scratch);

}  // namespace dtrain::compress
