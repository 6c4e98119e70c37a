// Helpers shared by the core/optim tests. BitEqual compares float ranges exactly, for the
// bit-for-bit invariants (shards equal one optimizer, restored state continues identically,
// clipping that is off leaves grad as it was).
//
//   BOOST_TEST(BitEqual(p_whole, p_shards));
//
// Compares representations, so -0 differs from +0 and a NaN equals the same NaN. Pure function.
#pragma once

#include <algorithm>
#include <bit>
#include <cstdint>
#include <span>

namespace dtrain::optim {

inline bool BitEqual(std::span<const float> a, std::span<const float> b) {
  return std::ranges::equal(a, b, [](float x, float y) {
    return std::bit_cast<std::uint32_t>(x) == std::bit_cast<std::uint32_t>(y);
  });
}

}  // namespace dtrain::optim
