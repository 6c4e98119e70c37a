// bfloat16: rounding to nearest with ties to even, NaN and infinities kept, and packing two values
// a float slot for any count of values.
#include "core/compress/bf16.h"

#include <bit>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>
#include <vector>

namespace dtrain::compress {
namespace {

float FromBits(std::uint32_t bits) { return std::bit_cast<float>(bits); }

BOOST_AUTO_TEST_SUITE(bf16)

BOOST_AUTO_TEST_CASE(exact_values_keep_their_bits) {
  BOOST_TEST(ToBf16(1.0f) == 0x3F80u);
  BOOST_TEST(ToBf16(-2.0f) == 0xC000u);
  BOOST_TEST(ToBf16(0.0f) == 0x0000u);
  BOOST_TEST(ToBf16(-0.0f) == 0x8000u);
  BOOST_TEST(FromBf16(0x3F80) == 1.0f);
  BOOST_TEST(FromBf16(0xC040) == -3.0f);
  BOOST_TEST(RoundToBf16(0.15625f) == 0.15625f);  // 5 * 2^-5: few mantissa bits
}

BOOST_AUTO_TEST_CASE(rounds_to_nearest_with_ties_to_even) {
  // A bf16 ulp at 1 is 2^-7: 1 + 2^-8 lies halfway between 1 (even) and 1 + 2^-7 (odd).
  BOOST_TEST(ToBf16(1.0f + 0x1.0p-8f) == 0x3F80u);
  BOOST_TEST(ToBf16(1.0f + 3 * 0x1.0p-8f) == 0x3F82u);  // halfway between odd and even: up
  BOOST_TEST(ToBf16(1.0f + 0x1.0p-8f + 0x1.0p-20f) == 0x3F81u);
  BOOST_TEST(ToBf16(1.0f + 0x1.0p-8f - 0x1.0p-20f) == 0x3F80u);
  BOOST_TEST(ToBf16(-(1.0f + 0x1.0p-8f + 0x1.0p-20f)) == 0xBF81u);
  // The largest float is more than half an ulp above bf16's largest: infinity.
  BOOST_TEST(ToBf16(std::numeric_limits<float>::max()) == 0x7F80u);
}

BOOST_AUTO_TEST_CASE(infinities_stay_and_nan_stays_a_quiet_nan) {
  BOOST_TEST(ToBf16(std::numeric_limits<float>::infinity()) == 0x7F80u);
  BOOST_TEST(ToBf16(-std::numeric_limits<float>::infinity()) == 0xFF80u);
  BOOST_TEST(std::isnan(RoundToBf16(std::numeric_limits<float>::quiet_NaN())));
  // A NaN whose payload lies only in the dropped bits: cut off, it would read as infinity.
  const std::uint16_t low_payload = ToBf16(FromBits(0x7F800001u));
  BOOST_TEST(std::isnan(FromBf16(low_payload)));
  BOOST_TEST((low_payload & 0x0040u) != 0u);
  // A NaN whose rounding would carry into the exponent.
  BOOST_TEST(std::isnan(RoundToBf16(FromBits(0x7FFFFFFFu))));
}

BOOST_AUTO_TEST_CASE(packs_and_unpacks_any_count_of_values) {
  for (const std::size_t n : {0u, 1u, 2u, 5u, 8u}) {
    std::vector<float> values(n);
    for (std::size_t i = 0; i < n; ++i) values[i] = static_cast<float>(i) * 1.5f - 3.0f;
    std::vector<float> packed(PackedFloats(n));
    PackBf16(values, packed);
    BOOST_TEST(packed.size() == (n + 1) / 2);
    if (n % 2 == 1) BOOST_TEST((std::bit_cast<std::uint32_t>(packed.back()) >> 16) == 0u);

    for (std::size_t i = 0; i < n; ++i) BOOST_TEST(UnpackBf16(packed[i / 2], i % 2) == values[i]);
  }
}

BOOST_AUTO_TEST_CASE(value_2i_goes_to_the_low_half_of_slot_i) {
  const std::vector<float> values{1.0f, -2.0f, 3.0f};
  std::vector<float> packed(PackedFloats(values.size()));
  PackBf16(values, packed);
  BOOST_TEST(std::bit_cast<std::uint32_t>(packed[0]) == 0xC0003F80u);
  BOOST_TEST(std::bit_cast<std::uint32_t>(packed[1]) == 0x00004040u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace dtrain::compress
