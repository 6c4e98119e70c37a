// bfloat16: rounding to nearest with ties to even, NaN and infinities kept, and packing two values
// a float slot for any count of values.
#include "core/compress/bf16.h"

#include <bit>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <limits>
#include <vector>

namespace dtrain::compress {
namespace bf16_test {

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

// Values that exercise the rounding: ties, carries, NaN, infinities, zeros of both signs,
// subnormals; then pseudo-random ones.
std::vector<float> HardValues(std::size_t n) {
  std::vector<float> v{1.0f + 0x1.0p-8f,
                       1.0f + 3 * 0x1.0p-8f,
                       -0.0f,
                       0.0f,
                       std::numeric_limits<float>::infinity(),
                       -std::numeric_limits<float>::infinity(),
                       FromBits(0x7F800001u),
                       FromBits(0x7FFFFFFFu),
                       std::numeric_limits<float>::max(),
                       std::numeric_limits<float>::denorm_min(),
                       FromBits(0x807FFFFFu)};
  std::uint32_t state = 12345;
  while (v.size() < n) {
    state = state * 1664525u + 1013904223u;
    v.push_back(FromBits(state));  // any bit pattern, NaNs included
  }
  v.resize(n);
  return v;
}

// The whole arrays at once (the vector loops) give each value's own rounding, whatever the
// count (a NaN sum stays a NaN); unpacking gives each half's value: every slot's halves, the
// residuals, and the sums of unpacked values, bit for bit; the last odd slot's high half is cleared
// over whatever the buffer held.
BOOST_AUTO_TEST_CASE(arrays_of_any_length_give_each_values_own_bits) {
  for (const std::size_t n : {1u, 2u, 15u, 16u, 17u, 33u, 64u, 1001u}) {
    BOOST_TEST_CONTEXT("n = " << n) {
      const std::vector<float> grad = HardValues(n);
      std::vector<float> residual = HardValues(n + 7);
      residual.erase(residual.begin(), residual.begin() + 7);
      const std::vector<float> before = residual;
      std::vector<float> packed(PackedFloats(n), FromBits(0xFFFFFFFFu));
      PackBf16KeepingResidual(grad, residual, packed);
      std::vector<float> sums = HardValues(n + 3);
      sums.erase(sums.begin(), sums.begin() + 3);
      const std::vector<float> sums_before = sums;
      AddUnpackedBf16(packed, sums);
      std::vector<float> unpacked(n);
      UnpackBf16(packed, unpacked);
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < n; ++i) {
        const float m = before[i] + grad[i];
        const std::uint16_t b = ToBf16(m);
        const float kept = m - FromBf16(b);
        const float sum = sums_before[i] + FromBf16(b);
        const auto half = static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(packed[i / 2]) >>
                                                     (16 * (i % 2)));
        if (std::bit_cast<std::uint32_t>(unpacked[i]) !=
            std::bit_cast<std::uint32_t>(FromBf16(half))) {
          ++wrong;
        }
        // A NaN's payload after an addition is the CPU's choice of operand: NaN is all it must be.
        if (std::isnan(m)) {
          if (!std::isnan(FromBf16(half)) || !std::isnan(residual[i]) || !std::isnan(sums[i])) {
            ++wrong;
          }
          continue;
        }
        if (half != b ||
            std::bit_cast<std::uint32_t>(residual[i]) != std::bit_cast<std::uint32_t>(kept) ||
            std::bit_cast<std::uint32_t>(sums[i]) != std::bit_cast<std::uint32_t>(sum)) {
          ++wrong;
        }
      }
      BOOST_TEST(wrong == 0u);
      if (n % 2 == 1) BOOST_TEST((std::bit_cast<std::uint32_t>(packed.back()) >> 16) == 0u);
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace bf16_test
}  // namespace dtrain::compress
