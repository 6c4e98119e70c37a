#include "core/dist/shard_ranges.h"

namespace dtrain::dist {

std::vector<ShardRange> ShardRanges(std::size_t n, int shards) {
  std::vector<ShardRange> ranges;
  if (shards < 1) return ranges;
  const auto k = static_cast<std::size_t>(shards);
  const std::size_t base = n / k;
  const std::size_t extra = n % k;
  ranges.reserve(k);
  std::size_t begin = 0;
  for (std::size_t s = 0; s < k; ++s) {
    const std::size_t size = base + (s < extra ? 1 : 0);
    ranges.push_back({begin, begin + size});
    begin += size;
  }
  return ranges;
}

}  // namespace dtrain::dist
