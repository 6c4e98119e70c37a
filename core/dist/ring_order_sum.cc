#include "core/dist/ring_order_sum.h"

#include <cstddef>

#include "core/dist/shard_ranges.h"

namespace dtrain::dist {

void SumInRingOrder(std::span<const float> blocks, int world, float scale, std::span<float> out) {
  const std::size_t size = out.size();
  const auto block = [&](int rank) {
    return blocks.data() + static_cast<std::size_t>(rank) * size;
  };
  for (int c = 0; c < world; ++c) {
    const ShardRange chunk = ShardRangeOf(size, world, c);
    float* sum = out.data();
    const float* first = block(c);
    for (std::size_t i = chunk.begin; i < chunk.end; ++i) sum[i] = first[i];
    // Ranks c+1, ..., c-1 in turn, each adding the partial sum into its own values as the ring
    // does (own + partial: the same operands in the same order, NaN payloads included); the last
    // one, the ring's finisher, also scales where scale is not 1.
    for (int k = 1; k < world; ++k) {
      const float* own = block((c + k) % world);
      if (k + 1 < world || scale == 1.0f) {
        for (std::size_t i = chunk.begin; i < chunk.end; ++i) sum[i] = own[i] + sum[i];
      } else {
        for (std::size_t i = chunk.begin; i < chunk.end; ++i) sum[i] = (own[i] + sum[i]) * scale;
      }
    }
  }
}

}  // namespace dtrain::dist
