#include "core/dist/ring_order_sum.h"

#include <algorithm>
#include <cstddef>

#include "core/dist/shard_ranges.h"

namespace dtrain::dist {

void SumChunkInRingOrder(const float* pieces, std::size_t stride, int world, int c, float scale,
                         std::span<float> out) {
  const std::size_t n = out.size();
  float* sum = out.data();
  const float* first = pieces + static_cast<std::size_t>(c) * stride;
  if (first != sum) std::copy(first, first + n, sum);
  // Ranks c+1, ..., c-1 in turn, each adding the partial sum into its own values as the ring
  // does (own + partial: the same operands in the same order, NaN payloads included); the last
  // one, the ring's finisher, also scales where scale is not 1.
  for (int k = 1; k < world; ++k) {
    const float* own = pieces + static_cast<std::size_t>((c + k) % world) * stride;
    if (k + 1 < world || scale == 1.0f) {
      for (std::size_t i = 0; i < n; ++i) sum[i] = own[i] + sum[i];
    } else {
      for (std::size_t i = 0; i < n; ++i) sum[i] = (own[i] + sum[i]) * scale;
    }
  }
}

void SumInRingOrder(std::span<const float> blocks, int world, float scale, std::span<float> out) {
  const std::size_t size = out.size();
  for (int c = 0; c < world; ++c) {
    const ShardRange chunk = ShardRangeOf(size, world, c);
    SumChunkInRingOrder(blocks.data() + chunk.begin, size, world, c, scale,
                        out.subspan(chunk.begin, chunk.size()));
  }
}

}  // namespace dtrain::dist
