// Top-k selection: the same indices a full sort by (magnitude, then lower index) picks, NaN
// first, for every k, also through the sample's shortcut of many values; and the sparse message's
// round trip.
#include "core/compress/top_k.h"

#include <algorithm>
#include <bit>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "core/data/random.h"

namespace dtrain::compress {
namespace top_k_test {

// The k largest by a full sort: larger magnitude first (NaN above all), then the lower index.
std::vector<std::uint32_t> SortedTopK(const std::vector<float>& values, std::size_t k) {
  const auto larger = [&](std::uint32_t a, std::uint32_t b) {
    const float x = values[a], y = values[b];
    if (std::isnan(x) || std::isnan(y)) return !std::isnan(y);
    return std::fabs(x) > std::fabs(y);
  };
  std::vector<std::uint32_t> order(values.size());
  std::iota(order.begin(), order.end(), 0u);
  std::ranges::stable_sort(order, larger);
  order.resize(k);
  std::ranges::sort(order);
  return order;
}

std::vector<std::uint32_t> TopK(const std::vector<float>& values, std::size_t k) {
  std::vector<std::uint32_t> indices(k);
  SelectTopK(values, indices);
  return indices;
}

// Values with many ties in magnitude (small integers of either sign, both zeros), and a few
// infinities and NaNs.
std::vector<float> TiedValues(std::size_t n, std::uint64_t seed) {
  data::SplitMix64 rng(seed);
  std::vector<float> values(n);
  for (float& v : values) {
    switch (rng.Bounded(20)) {
      case 0:
        v = std::numeric_limits<float>::quiet_NaN();
        break;
      case 1:
        v = -std::numeric_limits<float>::infinity();
        break;
      case 2:
        v = -0.0f;
        break;
      default:
        v = static_cast<float>(static_cast<int>(rng.Bounded(9)) - 4);
    }
  }
  return values;
}

BOOST_AUTO_TEST_SUITE(top_k)

BOOST_AUTO_TEST_CASE(selects_what_a_full_sort_selects) {
  for (const std::size_t n : {1u, 7u, 100u, 1000u}) {
    const std::vector<float> tied = TiedValues(n, n);
    std::vector<float> distinct(n);
    data::SplitMix64 rng(n + 1);
    for (float& v : distinct) v = static_cast<float>(rng.Uniform() * 2.0 - 1.0);
    for (const std::size_t k : {std::size_t{1}, n / 3 + 1, n / 2 + 1, n}) {
      BOOST_TEST(TopK(tied, k) == SortedTopK(tied, k), "n " << n << " k " << k);
      BOOST_TEST(TopK(distinct, k) == SortedTopK(distinct, k), "n " << n << " k " << k);
    }
  }
}

// Many values, few taken (k <= n / 64, n >= 2^16): the selection goes through a sample's bound
// first; where the sample is unlike the rest (every 16th value large, the others not: fewer
// than k values reach its bound) it falls back to the full select. The same indices either way.
BOOST_AUTO_TEST_CASE(many_values_select_what_a_full_sort_selects) {
  constexpr std::size_t n = std::size_t{1} << 17;
  std::vector<float> distinct(n);
  data::SplitMix64 rng(3);
  for (float& v : distinct) v = static_cast<float>(rng.Uniform() * 2.0 - 1.0);
  const std::vector<float> tied = TiedValues(n, 4);
  std::vector<float> misleading(n, 1.0f);
  for (std::size_t i = 0; i < n; i += 16) misleading[i] = 1000.0f + static_cast<float>(i);
  for (const std::size_t k : {std::size_t{1}, std::size_t{100}, std::size_t{1000}, n / 64}) {
    BOOST_TEST(TopK(distinct, k) == SortedTopK(distinct, k), "k " << k);
    BOOST_TEST(TopK(tied, k) == SortedTopK(tied, k), "k " << k);
    BOOST_TEST(TopK(misleading, k) == SortedTopK(misleading, k), "k " << k);
  }
}

BOOST_AUTO_TEST_CASE(ties_go_to_the_lower_index_and_nan_counts_largest) {
  BOOST_TEST(TopK({1.0f, -1.0f, 1.0f, -1.0f}, 2) == (std::vector<std::uint32_t>{0, 1}));
  BOOST_TEST(TopK({0.5f, 2.0f, -2.0f, 1.0f}, 1) == (std::vector<std::uint32_t>{1}));
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  BOOST_TEST(TopK({inf, 3.0f, nan, -inf}, 1) == (std::vector<std::uint32_t>{2}));
  BOOST_TEST(TopK({inf, 3.0f, nan, -inf}, 3) == (std::vector<std::uint32_t>{0, 2, 3}));
}

BOOST_AUTO_TEST_CASE(k_equal_to_n_selects_every_index) {
  BOOST_TEST(TopK({0.0f, -0.0f, 0.0f}, 3) == (std::vector<std::uint32_t>{0, 1, 2}));
  BOOST_TEST(TopK({5.0f, -1.0f, 2.0f, 0.0f}, 4) == (std::vector<std::uint32_t>{0, 1, 2, 3}));
}

BOOST_AUTO_TEST_CASE(a_message_carries_indices_then_values) {
  const std::vector<float> values{0.5f, -4.0f, 1.0f, 3.0f, -0.25f};
  const std::vector<std::uint32_t> indices{1, 3};
  std::vector<float> message(2 * indices.size());
  WriteSparse(values, indices, message);
  BOOST_TEST(std::bit_cast<std::uint32_t>(message[0]) == 1u);
  BOOST_TEST(std::bit_cast<std::uint32_t>(message[1]) == 3u);
  BOOST_TEST(message[2] == -4.0f);
  BOOST_TEST(message[3] == 3.0f);

  std::vector<float> sum{1.0f, 1.0f, 1.0f, 1.0f};
  AddSparse(message, indices.size(), 0.25f, sum);
  BOOST_TEST(sum == (std::vector<float>{1.0f, 0.0f, 1.0f, 1.75f}));
  std::vector<float> shorter{1.0f, 1.0f};  // index 3 lies beyond it: ignored
  AddSparse(message, indices.size(), 1.0f, shorter);
  BOOST_TEST(shorter == (std::vector<float>{1.0f, -3.0f}));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace top_k_test
}  // namespace dtrain::compress
