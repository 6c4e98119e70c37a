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

std::string FormatRange(std::size_t begin, std::size_t end) {
  std::string r = "[";  // appended piece by piece: "[" + to_string(...) trips GCC 12's -Wrestrict
  r += std::to_string(begin);
  r += ", ";
  r += std::to_string(end);
  r += ")";
  return r;
}

}  // namespace dtrain::dist
