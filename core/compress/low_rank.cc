#include "core/compress/low_rank.h"

#include <cmath>

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
  for (std::size_t row = 0; row < m; ++row) {
    const float* p_row = &p[row * r];
    for (std::size_t col = 0; col < n; ++col) {
      const float* q_row = &q[col * r];
      double sum = 0.0;  // products of floats are exact in a double: fused or not, same bits
      for (std::size_t k = 0; k < r; ++k) {
        sum += static_cast<double>(p_row[k]) * static_cast<double>(q_row[k]);
      }
      out[row * n + col] += static_cast<float>(static_cast<double>(scale) * sum);
    }
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
