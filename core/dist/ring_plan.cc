// RingAllReduce's plans: which messages an op sends and receives, cut into segments, for the ring
// (reduce-scatter then all-gather), the two-rank exchange, the gather both ways round the ring and
// the scatter of each chunk's values to its rank, and what an all-reduce sends. The class and its
// contract are in ring_allreduce.h; the driving of an op is in ring_allreduce.cc.
#include <algorithm>

#include "core/dist/ring_allreduce.h"
#include "core/dist/shard_ranges.h"

namespace dtrain::dist {
namespace {

// Segments are cut so that a chunk makes at least kPipelineDepth of them, but none smaller than
// kMinSegment floats (unless RingOptions::segment_floats says so): below 64 KiB a message's fixed
// costs (a frame, two or three system calls, perhaps a wake-up) outweigh what pipelining saves.
constexpr std::size_t kPipelineDepth = 4;
constexpr std::size_t kMinSegment = 16384;

// A calling thread that sends sends at most this many bytes ahead of what it has received (two
// ranks; a ring): well within what a TCP connection buffers (loopback's send buffer alone grows to
// megabytes), so its sends do not block while the peer does the same. Measured best on 2 cores.
constexpr std::size_t kExchangeAheadBytes = 512 << 10;
constexpr std::size_t kRingAheadBytes = 1 << 20;

// Floats per message for a chunk of `chunk` floats: at most `max_segment`, at least
// kPipelineDepth messages per chunk where that leaves them kMinSegment floats or more.
std::size_t SegmentFloats(std::size_t chunk, std::size_t max_segment) {
  return std::min(max_segment,
                  std::max(kMinSegment, (chunk + kPipelineDepth - 1) / kPipelineDepth));
}

// Calls f on each consecutive piece of `range` of `segment` floats (the last one shorter).
template <typename F>
void ForEachSegment(std::span<float> range, std::size_t segment, F f) {
  for (std::size_t at = 0; at < range.size(); at += segment) {
    f(range.subspan(at, std::min(segment, range.size() - at)));
  }
}

// Messages of `segment` floats a calling thread that sends may send ahead of what it received,
// `bytes` at most (one at least).
std::size_t SendAhead(std::size_t bytes, std::size_t segment) {
  return std::max<std::size_t>(1, bytes / (segment * sizeof(float)));
}

}  // namespace

bool RingAllReduce::GathersToSum(int world, std::size_t bytes, const RingOptions& options) {
  return world >= 3 && options.gather_sum_bytes > 0 &&
         bytes * static_cast<std::size_t>(world - 1) <= options.gather_sum_bytes;
}

std::size_t RingAllReduce::ScatterChunksSent(int world) {
  const int leftward = (world - 1) / 2, rightward = world - 1 - leftward;
  return static_cast<std::size_t>(rightward * (rightward + 3) / 2 + leftward * (leftward + 3) / 2);
}

bool RingAllReduce::ScattersToSum(int world, std::size_t bytes, const RingOptions& options) {
  if (world < 3 || world > options.scatter_most_ranks || GathersToSum(world, bytes, options)) {
    return false;
  }
  const std::size_t floats = bytes / sizeof(float);
  const std::size_t largest_chunk = (floats + static_cast<std::size_t>(world) - 1) / world;
  return ScatterChunksSent(world) * largest_chunk * sizeof(float) <= options.scatter_sum_bytes;
}

std::uint64_t RingAllReduce::BytesSent(std::size_t floats) const {
  if (world_ < 2) return 0;
  const std::uint64_t bytes = floats * sizeof(float);
  if (GathersToSum(bytes)) return bytes * static_cast<std::uint64_t>(world_ - 1);
  if (world_ == 2 && options_.direct_exchange) return bytes;
  const auto chunk = [&](int c) { return ShardRangeOf(floats, world_, Mod(c)).size(); };
  std::uint64_t sent = 0;
  if (ScattersToSum(bytes)) {
    // PlanScatter's hops t: chunks rank + 1 .. rank + R - t rightward, rank - 1 .. rank - L + t
    // leftward; then PlanGather's both ways: chunk rank - t rightward, rank + t leftward.
    const int leftward = (world_ - 1) / 2, rightward = world_ - 1 - leftward;
    for (int t = 0; t < rightward; ++t) {
      for (int d = 1; d <= rightward - t; ++d) sent += chunk(rank_ + d);
      for (int d = 1; d <= leftward - t; ++d) sent += chunk(rank_ - d);
      sent += chunk(rank_ - t) + (t < leftward ? chunk(rank_ + t) : 0);
    }
    return sent * sizeof(float);
  }
  // PlanRing's chunks: rank - s for each of the 2 (world - 1) steps
  for (int s = 0; s < 2 * (world_ - 1); ++s) sent += chunk(rank_ - s);
  return sent * sizeof(float);
}

std::span<float> RingAllReduce::Chunk(int c) const {
  const ShardRange r = ShardRangeOf(data_.size(), world_, c);
  return data_.subspan(r.begin, r.size());
}

void RingAllReduce::PlanRing(float scale) {
  // Deep enough a pipeline for small ranges too, of messages not so small that their fixed
  // costs dominate; the same on every rank, as it depends only on the size and the world.
  const std::size_t segment = SegmentFloats(Chunk(0).size(), options_.segment_floats);
  ahead_ = SendAhead(kRingAheadBytes, segment);
  const int steps = 2 * (world_ - 1);
  // Index of the first message sent in each step.
  std::vector<std::size_t> send_start(1, 0);
  for (int s = 0; s < steps; ++s) {
    const std::span<float> chunk = Chunk(Mod(rank_ - s));
    ForEachSegment(chunk, segment, [&](std::span<float> m) { sends_.push_back({m, right_}); });
    send_start.push_back(sends_.size());
    last_op_.bytes_sent += chunk.size_bytes();
  }
  for (int s = 0; s < steps; ++s) {
    const std::span<float> chunk = Chunk(Mod(rank_ - s - 1));
    const bool reduce = s < world_ - 1;
    const float step_scale = s == world_ - 2 ? scale : 1.0f;  // the step that finishes the chunk
    std::size_t k = 0;
    ForEachSegment(chunk, segment, [&](std::span<float> m) {
      // Sent on in step s+1. An all-gather segment lands in place, where this rank read what it
      // sent in step s+1-world (segment k of the same chunk).
      const std::size_t after_sent =
          reduce ? 0 : send_start[static_cast<std::size_t>(s + 1 - world_)] + k + 1;
      receives_.push_back(Incoming{.values = m,
                                   .from = left_,
                                   .reduce = reduce,
                                   .scale = step_scale,
                                   .after_sent = after_sent,
                                   .forward = s + 1 < steps});
      ++k;
    });
    last_op_.bytes_received += chunk.size_bytes();
  }
  posted_.store(send_start[1], std::memory_order_relaxed);  // step 0 sends this rank's own chunk
}

void RingAllReduce::PlanGather(bool both_ways) {
  // Chunk(c) is block c, as the blocks are equal. Hop t sends block rank - t to the right and block
  // rank + t to the left (this rank's own, then what came in the hop before from the other side)
  // and receives block rank - t - 1 from the left and block rank + t + 1 from the right in place:
  // this rank never sends a block before it has arrived, so nothing waits for a send. Sends and
  // receives go in the same order, hop by hop, rightward before leftward, so each message that is
  // passed on is the next one its receipt posts. Blocks larger than a gather for a sum takes go
  // rightward only, in world - 1 hops: both ways measured slower from 64 KiB at 4 ranks
  // (docs/performance-notes.md), unless `both_ways` says otherwise. The blocks may differ by a
  // float (a middle range's chunks): each message's size is known to both of its ends.
  const std::size_t segment = SegmentFloats(Chunk(0).size(), options_.segment_floats);
  ahead_ = SendAhead(kRingAheadBytes, segment);
  const int leftward = both_ways ? (world_ - 1) / 2 : 0;
  const int rightward = world_ - 1 - leftward;  // hops: ceil((world - 1) / 2) both ways
  std::size_t own = 0;
  for (int t = 0; t < rightward; ++t) {
    PlanCopies(Chunk(Mod(rank_ - t)), right_, segment);
    if (t < leftward) PlanCopies(Chunk(Mod(rank_ + t)), left_, segment);
    if (t == 0) own = sends_.size();
  }
  for (int t = 0; t < rightward; ++t) {
    PlanArrivals(Chunk(Mod(rank_ - t - 1)), left_, t + 1 < rightward, segment);
    if (t < leftward) PlanArrivals(Chunk(Mod(rank_ + t + 1)), right_, t + 1 < leftward, segment);
  }
  posted_.store(own, std::memory_order_relaxed);  // hop 0 sends this rank's own block
}

void RingAllReduce::PlanCopies(std::span<float> values, Link* to, std::size_t segment) {
  ForEachSegment(values, segment, [&](std::span<float> m) { sends_.push_back({m, to}); });
  last_op_.bytes_sent += values.size_bytes();
}

void RingAllReduce::PlanArrivals(std::span<float> into, Link* from, bool forward,
                                 std::size_t segment) {
  ForEachSegment(into, segment, [&](std::span<float> m) {
    receives_.push_back(Incoming{.values = m,
                                 .from = from,
                                 .reduce = false,
                                 .scale = 1.0f,
                                 .after_sent = 0,
                                 .forward = forward});
  });
  last_op_.bytes_received += into.size_bytes();
}

std::span<float> RingAllReduce::ScatterSlot(int origin, int c) {
  const std::size_t slot = Chunk(0).size();  // the largest chunk
  const auto at = static_cast<std::size_t>(origin * world_ + c) * slot;
  return std::span<float>(gathered_).subspan(at, Chunk(c).size());
}

void RingAllReduce::PlanScatter() {
  // Hop t sends rightward rank - t's values of chunks rank + 1, ..., rank + R - t (this rank's own
  // in hop 0, then what came from the left in the hop before, for the chunks beyond this rank) and
  // leftward rank + t's of chunks rank - 1, ..., rank - L + t; it receives from the left rank - 1 -
  // t's values of chunks rank, ..., rank + R - 1 - t and from the right rank + 1 + t's of chunks
  // rank, ..., rank - L + 1 + t, each into its ScatterSlot, and passes on all but chunk rank's.
  // Sends and receives go hop by hop, rightward before leftward, chunks by distance: so each
  // message passed on is the next one its receipt posts, as in PlanGather.
  const std::size_t segment = SegmentFloats(Chunk(0).size(), options_.segment_floats);
  ahead_ = SendAhead(kRingAheadBytes, segment);
  const int leftward = (world_ - 1) / 2, rightward = world_ - 1 - leftward;
  std::size_t own = 0;
  for (int t = 0; t < rightward; ++t) {
    for (int d = 1; d <= rightward - t; ++d) {
      const int c = Mod(rank_ + d);
      PlanCopies(t == 0 ? Chunk(c) : ScatterSlot(Mod(rank_ - t), c), right_, segment);
    }
    for (int d = 1; d <= leftward - t; ++d) {
      const int c = Mod(rank_ - d);
      PlanCopies(t == 0 ? Chunk(c) : ScatterSlot(Mod(rank_ + t), c), left_, segment);
    }
    if (t == 0) own = sends_.size();
  }
  for (int t = 0; t < rightward; ++t) {
    for (int d = 0; d < rightward - t; ++d) {
      PlanArrivals(ScatterSlot(Mod(rank_ - 1 - t), Mod(rank_ + d)), left_, d > 0, segment);
    }
    for (int d = 0; d < leftward - t; ++d) {
      PlanArrivals(ScatterSlot(Mod(rank_ + 1 + t), Mod(rank_ - d)), right_, d > 0, segment);
    }
  }
  posted_.store(own, std::memory_order_relaxed);  // hop 0 sends this rank's own values
}

void RingAllReduce::PlanExchange(float scale) {
  const std::size_t segment = SegmentFloats(data_.size(), options_.segment_floats);
  ahead_ = SendAhead(kExchangeAheadBytes, segment);
  ForEachSegment(data_, segment, [&](std::span<float> m) {
    sends_.push_back({m, right_});
    // Added in once this rank has sent its own values of it.
    receives_.push_back(Incoming{.values = m,
                                 .from = left_,
                                 .reduce = true,
                                 .scale = scale,
                                 .after_sent = sends_.size(),
                                 .forward = false});
  });
  last_op_.bytes_sent = data_.size_bytes();
  last_op_.bytes_received = data_.size_bytes();
  posted_.store(sends_.size(), std::memory_order_relaxed);  // nothing to wait for
}

}  // namespace dtrain::dist
