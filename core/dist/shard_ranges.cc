#include "core/dist/shard_ranges.h"

#include <algorithm>

namespace dtrain::dist {

std::vector<ShardRange> ShardRanges(std::size_t n, int shards) {
  std::vector<ShardRange> ranges;
  if (shards < 1) return ranges;
  ranges.reserve(static_cast<std::size_t>(shards));
  for (int s = 0; s < shards; ++s) ranges.push_back(ShardRangeOf(n, shards, s));
  return ranges;
}

ShardRange ShardRangeOf(std::size_t n, int shards, int shard) {
  const auto k = static_cast<std::size_t>(shards);
  const auto s = static_cast<std::size_t>(shard);
  const std::size_t base = n / k, extra = n % k;
  const std::size_t begin = s * base + std::min(s, extra);
  return {begin, begin + base + (s < extra ? 1 : 0)};
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
