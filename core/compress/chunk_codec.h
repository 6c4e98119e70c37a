// ChunkCodec: a compressor's side of a gather of host sums — how bf16 and top-k cross the network
// once per host where each host runs several replicas (issue 44's hierarchy). The replicas of a
// host sum a range in float32 within the host; the host's sum is cut into one chunk per replica of
// the host (math::PartOf); the replica at local index i encodes chunk i into one message, keeping
// in its residual what the message leaves out (error feedback per host, held by the replica that
// encodes the chunk); the messages of chunk i of every host are gathered across hosts and each
// replica there decodes them into chunk i of the mean; the host's replicas then share their chunks.
//
//   compress::GradientExchange& exchange = ...;   // exchange.SumsWithinHost()
//   Status s = exchange.GatherHostSums(range, codec);
//
// Invariant: MessageFloats depends only on the chunk (and the codec's plan), so every replica at
// one local index agrees on the messages' size. Decode gives the same bits on every replica that
// decodes the same messages.
#pragma once

#include <cstddef>
#include <span>

#include "core/math/part_range.h"

namespace dtrain::compress {

class ChunkCodec {
 public:
  // Called with this replica's own data before the host sums it, and the chunk it will encode:
  // what it adds to its data joins the host's sum (a residual held outside the chunk).
  virtual void BeforeSum(std::span<float> data, math::PartRange chunk) = 0;
  // The floats of one host's message for floats [chunk.begin, chunk.end) of the range.
  virtual std::size_t MessageFloats(math::PartRange chunk) const = 0;
  // message (MessageFloats(chunk) floats) = this host's message for the chunk of `sum`, the host's
  // sum of the whole range.
  virtual void Encode(std::span<const float> sum, math::PartRange chunk,
                      std::span<float> message) = 0;
  // The chunk of `out` (the whole range) = the mean over every replica of the job, from `hosts`
  // messages, host h's at messages[h * stride].
  virtual void Decode(std::span<const float> messages, std::size_t stride, std::size_t hosts,
                      math::PartRange chunk, std::span<float> out) = 0;

 protected:
  ~ChunkCodec() = default;
};

}  // namespace dtrain::compress
