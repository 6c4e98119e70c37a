// PartOf: a count of items cut into contiguous parts whose lengths differ by at most one, the
// longer ones first — how a batch's rows are split over threads, a vector's coordinates over
// threads or parameter-server shards (dist::ShardRangeOf), and a ring's chunks.
//
//   PartRange r = PartOf(10, 3, 1);   // [4, 7): parts [0,4) [4,7) [7,10)
//
// With count < parts the last parts are empty. Pure functions.
#pragma once

#include <algorithm>
#include <cstddef>

namespace dtrain::math {

struct PartRange {
  std::size_t begin = 0, end = 0;
};

// Part `part` (in [0, parts)) of `count` items cut into `parts` (>= 1).
inline PartRange PartOf(std::size_t count, int parts, int part) {
  const auto n = static_cast<std::size_t>(parts);
  const auto p = static_cast<std::size_t>(part);
  const std::size_t base = count / n, extra = count % n;
  const std::size_t begin = p * base + std::min(p, extra);
  return {begin, begin + base + (p < extra ? 1 : 0)};
}

}  // namespace dtrain::math
