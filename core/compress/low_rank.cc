#include "core/compress/low_rank.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/data/random.h"
#include "core/math/gemm.h"

namespace dtrain::compress {
namespace {

// A column keeps its direction only if at least this share of its norm survives the projections
// out of the columns before it; less is rounding noise of a dependent column, and becomes zeros.
constexpr double kIndependentShare = 1e-4;
// Below this norm a column is zero whatever it started from.
constexpr double kZeroNorm = 1e-30;

double ColumnNorm(std::span<const float> p, std::size_t m, std::size_t r, std::size_t column) {
  double squares = 0.0;
  for (std::size_t row = 0; row < m; ++row) {
    const double x = p[row * r + column];
    squares += x * x;
  }
  return std::sqrt(squares);
}

// Column `column` -= (its dot with `basis`) * basis, where `basis` is a unit column.
void ProjectOut(std::span<float> p, std::size_t m, std::size_t r, std::size_t basis,
                std::size_t column) {
  double dot = 0.0;
  for (std::size_t row = 0; row < m; ++row) {
    dot += static_cast<double>(p[row * r + basis]) * static_cast<double>(p[row * r + column]);
  }
  // The coefficient as a float makes coefficient * basis value exact in a double, so a compiler
  // that fuses the multiply and the subtraction gets the same bits.
  const double coefficient = static_cast<float>(dot);
  for (std::size_t row = 0; row < m; ++row) {
    float& x = p[row * r + column];
    x = static_cast<float>(static_cast<double>(x) -
                           coefficient * static_cast<double>(p[row * r + basis]));
  }
}

void ScaleColumn(std::span<float> p, std::size_t m, std::size_t r, std::size_t column,
                 double factor) {
  for (std::size_t row = 0; row < m; ++row) {
    float& x = p[row * r + column];
    x = static_cast<float>(static_cast<double>(x) * factor);
  }
}

}  // namespace

void MultiplyByQ(std::span<const float> m_values, std::size_t m, std::size_t n,
                 std::span<const float> q, std::size_t r, std::span<float> p) {
  const auto rows = static_cast<int>(m), cols = static_cast<int>(n), rank = static_cast<int>(r);
  math::Gemm(math::Trans::kNo, math::Trans::kNo, rows, rank, cols, 1.0f, m_values.data(), cols,
             q.data(), rank, 0.0f, p.data(), rank);
}

void MultiplyTransposedByP(std::span<const float> m_values, std::size_t m, std::size_t n,
                           std::span<const float> p, std::size_t r, std::span<float> q) {
  const auto rows = static_cast<int>(m), cols = static_cast<int>(n), rank = static_cast<int>(r);
  math::Gemm(math::Trans::kYes, math::Trans::kNo, cols, rank, rows, 1.0f, m_values.data(), cols,
             p.data(), rank, 0.0f, q.data(), rank);
}

void Orthonormalize(std::span<float> p, std::size_t m, std::size_t r) {
  for (std::size_t column = 0; column < r; ++column) {
    const double original = ColumnNorm(p, m, r, column);
    for (std::size_t basis = 0; basis < column; ++basis) ProjectOut(p, m, r, basis, column);
    const double norm = ColumnNorm(p, m, r, column);
    const bool dependent = norm <= kZeroNorm || norm <= kIndependentShare * original;
    ScaleColumn(p, m, r, column, dependent ? 0.0 : 1.0 / norm);
  }
}

void AddProduct(std::span<const float> p, std::span<const float> q, std::size_t m, std::size_t n,
                std::size_t r, float scale, std::span<float> out) {
  // Q transposed (r rows of n), so that each of a row's sums grows along a contiguous row of it:
  // the loop over columns vectorises, and each value's sum still adds its r products in order
  // k = 0, 1, ... from 0.0, in a double (products of floats are exact there, fused or not): the
  // same bits as one dot product per value, on every CPU.
  thread_local std::vector<float> q_t;
  thread_local std::vector<double> sums;
  q_t.resize(r * n);
  sums.resize(n);
  for (std::size_t col = 0; col < n; ++col) {
    for (std::size_t k = 0; k < r; ++k) q_t[k * n + col] = q[col * r + k];
  }
  const auto factor = static_cast<double>(scale);
  for (std::size_t row = 0; row < m; ++row) {
    const float* p_row = &p[row * r];
    double* sum = sums.data();
    std::fill_n(sum, n, 0.0);
    for (std::size_t k = 0; k < r; ++k) {
      const auto a = static_cast<double>(p_row[k]);
      const float* b = &q_t[k * n];
      for (std::size_t col = 0; col < n; ++col) sum[col] += a * static_cast<double>(b[col]);
    }
    float* o = &out[row * n];
    for (std::size_t col = 0; col < n; ++col) o[col] += static_cast<float>(factor * sum[col]);
  }
}

void InitialQ(std::uint64_t seed, std::span<float> q) {
  data::SplitMix64 rng(seed);
  for (float& x : q) {
    // 24 random bits: u / 2^23 - 1 is exact in a float and lies in [-1, 1).
    const auto u = static_cast<float>(rng.Next() >> 40);
    x = u * 0x1.0p-23f - 1.0f;
  }
}

}  // namespace dtrain::compress
