// PowerSGD's algebra: one power step reproduces a matrix of the factors' rank, Gram-Schmidt gives
// orthonormal columns and zeros for dependent ones, M^T P over every row, the deterministic
// products (the fused residual-and-result pass has the separate ones' bits, and M^T P in parts
// the whole one's) and initial Q.
#include "core/compress/low_rank.h"

#include <boost/test/unit_test.hpp>
#include <cmath>
#include <utility>
#include <vector>

#include "core/data/random.h"

namespace dtrain::compress {
namespace low_rank_test {

std::vector<float> Uniform(std::size_t n, std::uint64_t seed) {
  data::SplitMix64 rng(seed);
  std::vector<float> values(n);
  for (float& v : values) v = static_cast<float>(rng.Uniform() * 2.0 - 1.0);
  return values;
}

// Column a's dot with column b of a row-major m x r matrix, in double.
double Dot(const std::vector<float>& p, std::size_t m, std::size_t r, std::size_t a,
           std::size_t b) {
  double sum = 0.0;
  for (std::size_t row = 0; row < m; ++row) {
    sum += static_cast<double>(p[row * r + a]) * static_cast<double>(p[row * r + b]);
  }
  return sum;
}

BOOST_AUTO_TEST_SUITE(low_rank)

BOOST_AUTO_TEST_CASE(one_power_step_reproduces_a_matrix_of_the_factors_rank) {
  constexpr std::size_t m = 40, n = 30, r = 3;
  const std::vector<float> a = Uniform(m * r, 1), b = Uniform(n * r, 2);
  std::vector<float> matrix(m * n, 0.0f);
  AddProduct(a, b, m, n, r, 1.0f, matrix);  // A B^T: rank 3

  std::vector<float> q(n * r), p(m * r);
  InitialQ(7, q);
  AddAndMultiplyByQ({}, matrix, m, n, q, r, p);
  Orthonormalize(p, m, r);
  MultiplyTransposedByP(matrix, m, n, p, r, q);
  std::vector<float> approx(m * n, 0.0f);
  AddProduct(p, q, m, n, r, 1.0f, approx);

  double error = 0.0, norm = 0.0;
  for (std::size_t i = 0; i < m * n; ++i) {
    error += std::pow(static_cast<double>(approx[i]) - matrix[i], 2);
    norm += std::pow(static_cast<double>(matrix[i]), 2);
  }
  BOOST_TEST(std::sqrt(error / norm) < 1e-4);
}

BOOST_AUTO_TEST_CASE(orthonormalize_gives_orthonormal_columns) {
  constexpr std::size_t m = 50, r = 4;
  std::vector<float> p = Uniform(m * r, 3);
  Orthonormalize(p, m, r);
  for (std::size_t a = 0; a < r; ++a) {
    for (std::size_t b = 0; b < r; ++b) {
      BOOST_TEST(std::fabs(Dot(p, m, r, a, b) - (a == b ? 1.0 : 0.0)) < 1e-5, a << ", " << b);
    }
  }
}

BOOST_AUTO_TEST_CASE(dependent_and_zero_columns_become_zeros) {
  constexpr std::size_t m = 20, r = 4;
  std::vector<float> p = Uniform(m * r, 4);
  for (std::size_t row = 0; row < m; ++row) {
    p[row * r + 2] = 2.0f * p[row * r + 0];  // dependent on column 0
    p[row * r + 3] = 0.0f;
  }
  const std::vector<float> first = p;
  Orthonormalize(p, m, r);

  for (std::size_t row = 0; row < m; ++row) {
    BOOST_TEST(p[row * r + 2] == 0.0f);
    BOOST_TEST(p[row * r + 3] == 0.0f);
  }
  BOOST_TEST(std::fabs(Dot(p, m, r, 0, 0) - 1.0) < 1e-5);
  BOOST_TEST(std::fabs(Dot(p, m, r, 1, 1) - 1.0) < 1e-5);
  BOOST_TEST(std::fabs(Dot(p, m, r, 0, 1)) < 1e-5);
  // The first column keeps its direction: it is only scaled.
  const double scale = std::sqrt(Dot(first, m, r, 0, 0));
  for (std::size_t row = 0; row < m; ++row) {
    BOOST_TEST(std::fabs(p[row * r] * scale - first[row * r]) < 1e-5);
  }
}

BOOST_AUTO_TEST_CASE(add_product_adds_scale_times_p_q_transposed_and_write_product_writes_it) {
  const std::vector<float> p{1.0f, 2.0f, 3.0f, -1.0f};             // 2 x 2
  const std::vector<float> q{1.0f, 0.0f, 0.0f, 1.0f, 2.0f, 2.0f};  // 3 x 2
  std::vector<float> out(6, 1.0f);
  AddProduct(p, q, 2, 3, 2, 2.0f, out);
  BOOST_TEST(out == (std::vector<float>{3.0f, 5.0f, 13.0f, 7.0f, -1.0f, 9.0f}));
  WriteProduct(p, q, 2, 3, 2, out);  // what was there is gone
  BOOST_TEST(out == (std::vector<float>{1.0f, 2.0f, 6.0f, 3.0f, -1.0f, 4.0f}));
}

BOOST_AUTO_TEST_CASE(multiply_transposed_by_p_sums_every_row_an_odd_count_included) {
  // Small integers: every product and sum is exact, so Q must be M^T P to the bit.
  constexpr std::size_t m = 5, n = 3, r = 2;
  std::vector<float> matrix(m * n), p(m * r), q(n * r);
  for (std::size_t i = 0; i < matrix.size(); ++i) matrix[i] = static_cast<float>(i % 7) - 3.0f;
  for (std::size_t i = 0; i < p.size(); ++i) p[i] = static_cast<float>(i % 5) - 2.0f;
  MultiplyTransposedByP(matrix, m, n, p, r, q);
  for (std::size_t col = 0; col < n; ++col) {
    for (std::size_t k = 0; k < r; ++k) {
      float expected = 0.0f;
      for (std::size_t row = 0; row < m; ++row) expected += matrix[row * n + col] * p[row * r + k];
      BOOST_TEST(q[col * r + k] == expected, "column " << col << " rank " << k);
    }
  }
}

BOOST_AUTO_TEST_CASE(q_rows_computed_in_parts_have_the_whole_products_bits) {
  constexpr std::size_t m = 9, n = 21, r = 3;
  const std::vector<float> matrix = Uniform(m * n, 8), p = Uniform(m * r, 9);
  std::vector<float> whole(n * r), parts(n * r, 0.0f);
  MultiplyTransposedByP(matrix, m, n, p, r, whole);
  for (const math::PartRange columns : {math::PartRange{0, 8}, {8, 9}, {9, 21}}) {
    MultiplyColumnsTransposedByP(matrix, m, n, columns, p, r, parts);
  }
  BOOST_TEST(parts == whole);
}

BOOST_AUTO_TEST_CASE(a_deferred_product_subtracted_in_the_pass_has_add_products_bits) {
  // 19 columns: a run of full vectors and a remainder; rank 3 keeps its sums in registers, rank 6
  // loops.
  constexpr std::size_t m = 6, n = 19;
  for (const std::size_t r : {3, 6}) {
    const std::vector<float> last_p = Uniform(m * r, 3), last_q = Uniform(n * r, 4),
                             g = Uniform(m * n, 5), start = Uniform(m * n, 6),
                             q = Uniform(n * r, 7);
    std::vector<float> fused = start, p(m * r);
    AddAndMultiplyByQ(g, fused, m, n, q, r, p, {last_p, last_q});
    std::vector<float> apart = start, expected_p(m * r);
    AddProduct(last_p, last_q, m, n, r, -1.0f, apart);
    AddAndMultiplyByQ(g, apart, m, n, q, r, expected_p);
    BOOST_TEST(fused == apart, "rank " << r);
    BOOST_TEST(p == expected_p, "rank " << r);
  }
}

// The sums the passes promise, written out plainly: P's dot products in 16 lanes (lane l adds
// columns l, l + 16, ... in order, then the lanes in order), P Q^T's values with their products
// in rank order, M^T P's with theirs in row order. Ranks up to 4 keep their sums in registers,
// larger ones loop: both must match.
// The sum from 0.0f of a * b for (a, b) = factors(0), factors(1), ..., factors(count - 1), in that
// order, each product rounded on its own (volatile: a multiply-add fused by a -march=native build
// would round once, not twice).
template <typename Factors>
float SumInOrder(std::size_t count, Factors factors) {
  float sum = 0.0f;
  for (std::size_t i = 0; i < count; ++i) {
    const auto [a, b] = factors(i);
    const volatile float product = a * b;
    sum += product;
  }
  return sum;
}

BOOST_AUTO_TEST_CASE(every_rank_gives_the_sums_in_their_stated_order) {
  // 11 rows: a group of eight and a remainder (M^T P takes rows eight at a time).
  constexpr std::size_t m = 11, n = 37;
  for (std::size_t r = 1; r <= 6; ++r) {
    const std::vector<float> g = Uniform(m * n, 10), start = Uniform(m * n, 11),
                             q = Uniform(n * r, 12), p_in = Uniform(m * r, 13);
    std::vector<float> values = start, p(m * r), written(m * n), q_out(n * r);
    AddAndMultiplyByQ(g, values, m, n, q, r, p);
    WriteProduct(p_in, q, m, n, r, written);
    MultiplyTransposedByP(start, m, n, p_in, r, q_out);
    for (std::size_t col = 0; col < n; ++col) {
      for (std::size_t k = 0; k < r; ++k) {
        const float sum = SumInOrder(
            m, [&](std::size_t row) { return std::pair(start[row * n + col], p_in[row * r + k]); });
        BOOST_TEST(q_out[col * r + k] == sum, "rank " << r << " Q row " << col << " column " << k);
      }
    }
    for (std::size_t row = 0; row < m; ++row) {
      for (std::size_t k = 0; k < r; ++k) {
        float lanes[16] = {};
        for (std::size_t col = 0; col < n; ++col) {
          // volatile: a multiply-add fused by a -march=native build would round once, not twice.
          const volatile float product = (start[row * n + col] + g[row * n + col]) * q[col * r + k];
          lanes[col % 16] += product;
        }
        float dot = 0.0f;
        for (const float x : lanes) dot += x;
        BOOST_TEST(p[row * r + k] == dot, "rank " << r << " row " << row << " column " << k);
      }
      for (std::size_t col = 0; col < n; ++col) {
        const float sum = SumInOrder(
            r, [&](std::size_t k) { return std::pair(p_in[row * r + k], q[col * r + k]); });
        BOOST_TEST(written[row * n + col] == sum, "rank " << r << " at " << row << ", " << col);
      }
    }
  }
}

BOOST_AUTO_TEST_CASE(write_product_writes_every_value_at_any_alignment) {
  // Rows of 19 floats starting one float into the buffer: no row starts on a 16-byte boundary
  // the same way, so the streamed runs meet every head and tail.
  constexpr std::size_t m = 5, n = 19, r = 2;
  const std::vector<float> p = Uniform(m * r, 8), q = Uniform(n * r, 9);
  std::vector<float> zeros(m * n, 0.0f), buffer(m * n + 1, 7.0f);
  AddProduct(p, q, m, n, r, 1.0f, zeros);
  WriteProduct(p, q, m, n, r, std::span(buffer).subspan(1));
  BOOST_TEST(buffer[0] == 7.0f);
  BOOST_TEST(std::vector<float>(buffer.begin() + 1, buffer.end()) == zeros);
}

BOOST_AUTO_TEST_CASE(initial_q_is_a_function_of_the_seed_within_minus_one_to_one) {
  std::vector<float> q(1000), again(1000), other(1000);
  InitialQ(11, q);
  InitialQ(11, again);
  InitialQ(12, other);
  BOOST_TEST(q == again);
  BOOST_TEST(q != other);
  double sum = 0.0;
  for (const float v : q) {
    BOOST_TEST((v >= -1.0f && v < 1.0f));
    sum += v;
  }
  BOOST_TEST(std::fabs(sum / 1000.0) < 0.1);  // centred: 0.1 is over five standard errors
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace low_rank_test
}  // namespace dtrain::compress
