// ShardRanges: how the flat parameter vector (and the gradient and every optimizer state vector,
// which share its layout) is cut into the contiguous ranges of parameter-server shards.
//
//   std::vector<ShardRange> r = ShardRanges(/*n=*/10, /*shards=*/3);  // [0,4) [4,7) [7,10)
//   grad.subspan(r[1].begin, r[1].size());                           // shard 1's slice
//
// The first n % shards ranges hold one float more than the rest (ring all-reduce cuts its chunks
// by the same rule, with ShardRangeOf), so
// sizes differ by at most one; with n < shards the last ranges are empty. The client and every
// shard compute the ranges from (n, shards) alone, so they agree without exchanging them (and
// check it at the handshake, ps_protocol.md). Pure functions: safe for concurrent use.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace dtrain::dist {

struct ShardRange {
  std::size_t begin = 0;
  std::size_t end = 0;
  std::size_t size() const { return end - begin; }
  bool operator==(const ShardRange&) const = default;
};

// `shards` contiguous ranges covering [0, n) in order; empty when shards < 1.
std::vector<ShardRange> ShardRanges(std::size_t n, int shards);
// ShardRanges(n, shards)[shard] alone, allocating nothing; shard in [0, shards).
ShardRange ShardRangeOf(std::size_t n, int shards, int shard);

// "[begin, end)", for messages.
std::string FormatRange(std::size_t begin, std::size_t end);

}  // namespace dtrain::dist
