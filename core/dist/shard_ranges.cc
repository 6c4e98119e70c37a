#include "core/dist/shard_ranges.h"

#include "core/math/part_range.h"

namespace dtrain::dist {

std::vector<ShardRange> ShardRanges(std::size_t n, int shards) {
  std::vector<ShardRange> ranges;
  if (shards < 1) return ranges;
  ranges.reserve(static_cast<std::size_t>(shards));
  for (int s = 0; s < shards; ++s) ranges.push_back(ShardRangeOf(n, shards, s));
  return ranges;
}

ShardRange ShardRangeOf(std::size_t n, int shards, int shard) {
  const math::PartRange r = math::PartOf(n, shards, shard);
  return {r.begin, r.end};
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
