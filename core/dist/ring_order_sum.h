// SumInRingOrder: the all-reduce's sum computed by one rank from every rank's whole range, with
// the bits the ring's reduce-scatter gives. RingAllReduce uses it for small ranges with more than
// two ranks, after an all-gather of whole ranges (world-1 steps instead of the ring's 2(world-1)),
// and SumChunkInRingOrder for one chunk, after every rank's values of that chunk came.
//
//   // blocks: world ranges of out.size() floats each, rank r's at block r
//   SumInRingOrder(blocks, world, /*scale=*/1.0f / world, out);
//
// Invariant: chunk c of the range (ShardRangeOf(size, world, c), the ring's chunks) is summed in
// the ring's order, ranks c, c+1, ..., c-1 (mod world), and the last addition is scaled, as the
// ring's finisher does: so every rank, and the ring itself, ends with the same bits. Pure: safe
// for concurrent use on distinct outputs.
#pragma once

#include <cstddef>
#include <span>

namespace dtrain::dist {

// out = the sum of the `world` blocks of `blocks` (each out.size() floats), times `scale` at the
// last addition; world >= 2.
void SumInRingOrder(std::span<const float> blocks, int world, float scale, std::span<float> out);

// out = chunk c's sum alone, in the ring's order, from rank r's values of that chunk at
// pieces + r * stride (out.size() floats each; out may be rank c's own): what SumInRingOrder
// computes for that chunk.
void SumChunkInRingOrder(const float* pieces, std::size_t stride, int world, int c, float scale,
                         std::span<float> out);

}  // namespace dtrain::dist
