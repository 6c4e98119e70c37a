// Compressed pushes to parameter servers ([cluster] compression "bf16" or "topk" with mode
// "async", or "sync" with allreduce "ps"): how a worker's gradient slice for each shard travels,
// and the shard's side that turns a push's data back into a slice (ps_protocol.md, "Compressed
// pushes").
//
//   std::vector<compress::TensorPlan> plan = PlanPushes(ranges, settings);  // one per shard
//   PsHeader hello = ...; AnnouncePushes(plan[k], hello);                 // worker, to shard k
//   Result<PushDecoder> d = PushDecoder::FromHello(hello, range.size());    // the shard
//   Status s = d.value().Receive(link, data_tag, push_header, slice, deadline);
//
// The plan is compress::PlanCompression's over the shard ranges as tensors (named "shard k of K
// [b, e)"): bf16 sends every slice as bf16; topk sends k = ceil(fraction * size) (index, value)
// pairs of a slice where that is at most a quarter of it, else the slice raw. The worker keeps the
// error feedback (compress::GradientCompressor::Encode); the shard only decodes.
//
// Bounded: a push's data has a length the hello fixed (size, PackedFloats(size) or 2k floats);
// a pair whose index is outside the slice, or a hello that names two encodings or a k outside
// [1, size], is refused with an error naming the worker, and nothing is written outside `out`.
// Pure functions and a value type; a PushDecoder is used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/compress/compression_plan.h"
#include "core/dist/link.h"
#include "core/dist/ps_messages.h"
#include "core/dist/shard_ranges.h"
#include "core/status.h"

namespace dtrain::dist {

// One TensorPlan per shard range, in shard order (offsets are the ranges' begins).
std::vector<compress::TensorPlan> PlanPushes(std::span<const ShardRange> ranges,
                                             const compress::Settings& settings);

// Writes into a hello to the shard of `slice` the encoding of this worker's compressed pushes.
void AnnouncePushes(const compress::TensorPlan& slice, PsHeader& hello);

class PushDecoder {
 public:
  PushDecoder() = default;  // raw pushes only
  // The encoding a worker's hello announced for a slice of `size` floats.
  static Result<PushDecoder> FromHello(const PsHeader& hello, std::size_t size);
  // The hello reply's flags and rows, echoing what was taken.
  void Echo(PsHeader& reply) const;
  // Receives the data message of push `push` (tagged `data_tag`) from `link` into `out` (the
  // slice's floats): the raw slice, or its encoding (kPsEncodedPush) decoded.
  Status Receive(Link& link, std::uint32_t data_tag, const PsHeader& push, std::span<float> out,
                 Deadline deadline);
  // The floats of an encoded push's data (0 when the hello announced none).
  std::size_t EncodedFloats() const { return message_.size(); }
  // out (the slice's floats) = `message`, an encoded push's EncodedFloats() floats, decoded.
  Status Decode(std::span<const float> message, std::span<float> out) const;

 private:
  std::uint32_t encoding_ = 0;  // 0, kPsBf16Pushes or kPsSparsePushes
  std::size_t pairs_ = 0;       // kPsSparsePushes: k
  std::vector<float> message_;  // an encoded push's floats
};

}  // namespace dtrain::dist
