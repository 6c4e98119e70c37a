// train.precision = "bf16"'s matrix products (precision.h, dnnl_gemm.h): their inputs are rounded
// as gradient compression rounds them (math::ToBf16, the same bits), and each product stays
// within the bound of bf16 inputs summed in float:
//
//   |C - C_exact| <= (2u + u^2 + k * 2^-22) * |alpha| * sum_p |A_ip| |B_pj| + 2^-22 * |C_exact|
//
// with u = 2^-8, bf16's unit roundoff (8 significant bits, round to nearest): each input is off
// by at most u of itself, so each term by 2u + u^2; the sum of k float terms and the beta term
// add float rounding. Run only where the CPU multiplies bf16 natively; the rounding test anywhere.
#include <algorithm>
#include <bit>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include "common/native_bf16.h"
#include "core/compress/bf16.h"
#include "core/math/bf16.h"
#include "core/math/buffer.h"
#include "core/math/gemm.h"

namespace dtrain::math {
namespace bf16_products_test {

using testing::NativeBf16Here;
using testing::ScopedPrecision;

float FromBits(std::uint32_t bits) { return std::bit_cast<float>(bits); }

BOOST_AUTO_TEST_SUITE(bf16_products)

// The block conversion (vectorised where the CPU has AVX-512) against ToBf16 value by value, on
// the values where a rounding can go wrong: ties, subnormals, the largest floats, NaN, infinity;
// and its packed bytes against compression's wire values of the same floats.
BOOST_AUTO_TEST_CASE(block_rounding_is_the_wire_rounding_value_for_value) {
  std::vector<float> values = {0.0f,
                               -0.0f,
                               1.0f + 0x1.0p-8f,
                               1.0f + 3 * 0x1.0p-8f,
                               -(1.0f + 0x1.0p-8f + 0x1.0p-20f),
                               std::numeric_limits<float>::denorm_min(),
                               FromBits(0x00408000u),  // a subnormal exactly between two
                               -FromBits(0x007FFFFFu),
                               std::numeric_limits<float>::max(),
                               std::numeric_limits<float>::infinity(),
                               -std::numeric_limits<float>::infinity(),
                               std::numeric_limits<float>::quiet_NaN(),
                               FromBits(0x7F800001u)};
  std::mt19937 rng(3);
  while (values.size() < 3 * 53) values.push_back(FromBits(static_cast<std::uint32_t>(rng())));
  const int rows = 3, cols = 50, ld = 53;  // row stride wider than the row: 3 floats skipped
  std::vector<std::uint16_t> dense(static_cast<std::size_t>(rows) * cols);
  ToBf16Rows(values.data(), rows, cols, ld, dense.data());
  std::vector<float> row(cols), wire(compress::PackedFloats(cols));
  for (int r = 0; r < rows; ++r) {
    std::copy_n(values.begin() + r * ld, cols, row.begin());
    compress::PackBf16(row, wire);
    for (int c = 0; c < cols; ++c) {
      const std::uint16_t b = dense[static_cast<std::size_t>(r) * cols + c];
      BOOST_TEST(b == ToBf16(row[c]), "row " << r << " col " << c);
      const auto on_wire =
          static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(wire[c / 2]) >> (16 * (c % 2)));
      BOOST_TEST(b == on_wire, "row " << r << " col " << c);
    }
  }
}

// 1 + 2^-10 is no bf16 value: rounded, every term of the sum is 1 exactly, so a product of eight
// is 8 where float inputs would give 8 + 2^-7. Shows the products take bf16 inputs at all.
BOOST_AUTO_TEST_CASE(products_round_their_inputs_to_bf16,
                     *boost::unit_test::precondition(NativeBf16Here)) {
  const ScopedPrecision bf16(Precision::kBf16);
  const int k = 8;
  FloatBuffer a(k, 1.0f + 0x1.0p-10f), b(k, 1.0f), c(1, 5.0f);
  Gemm(Trans::kNo, Trans::kNo, 1, 1, k, 1.0f, a.data(), k, b.data(), 1, 0.0f, c.data(), 1);
  BOOST_TEST(c[0] == 8.0f);
  SetPrecision(Precision::kFp32);
  Gemm(Trans::kNo, Trans::kNo, 1, 1, k, 1.0f, a.data(), k, b.data(), 1, 0.0f, c.data(), 1);
  BOOST_TEST(c[0] == 8.0f + 0x1.0p-7f);
}

FloatBuffer Random(std::size_t n, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  FloatBuffer v(n);
  for (float& x : v) x = normal(rng);
  return v;
}

// Random shapes as layers make them (odd sizes, transposes, row strides wider than the matrix,
// alpha, beta 0 and 1), each element against the bound above from double sums.
BOOST_AUTO_TEST_CASE(products_stay_within_the_bf16_bound,
                     *boost::unit_test::precondition(NativeBf16Here)) {
  const ScopedPrecision bf16(Precision::kBf16);
  constexpr double u = 0x1.0p-8;
  std::mt19937 rng(17);
  for (int round = 0; round < 24; ++round) {
    const int m = 1 + static_cast<int>(rng() % 130), n = 1 + static_cast<int>(rng() % 70),
              k = 1 + static_cast<int>(rng() % 600), pad = static_cast<int>(rng() % 3);
    const bool ta = rng() % 2 != 0, tb = rng() % 2 != 0;
    const float alpha = round % 3 == 0 ? 0.5f : 1.0f, beta = round % 2 ? 1.0f : 0.0f;
    const int lda = (ta ? m : k) + pad, ldb = (tb ? k : n) + pad, ldc = n + pad;
    const FloatBuffer a = Random(static_cast<std::size_t>(ta ? k : m) * lda, rng);
    const FloatBuffer b = Random(static_cast<std::size_t>(tb ? n : k) * ldb, rng);
    const FloatBuffer c0 = Random(static_cast<std::size_t>(m) * ldc, rng);
    FloatBuffer c(c0);
    Gemm(ta ? Trans::kYes : Trans::kNo, tb ? Trans::kYes : Trans::kNo, m, n, k, alpha, a.data(),
         lda, b.data(), ldb, beta, c.data(), ldc);
    BOOST_TEST_CONTEXT("m " << m << " n " << n << " k " << k << " round " << round) {
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j) {
          double exact = 0, magnitude = 0;
          for (int p = 0; p < k; ++p) {
            const double av = ta ? a[p * lda + i] : a[i * lda + p];
            const double bv = tb ? b[j * ldb + p] : b[p * ldb + j];
            exact += av * bv;
            magnitude += std::abs(av * bv);
          }
          exact = alpha * exact + beta * c0[i * ldc + j];
          const double bound =
              (2 * u + u * u + k * 0x1.0p-22) * alpha * magnitude + 0x1.0p-22 * std::abs(exact);
          BOOST_TEST(std::abs(c[i * ldc + j] - exact) <= bound, "C[" << i << ", " << j << "]");
        }
      }
    }
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace bf16_products_test
}  // namespace dtrain::math
