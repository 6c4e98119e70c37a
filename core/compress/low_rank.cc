#include "core/compress/low_rank.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/compress/compression_plan.h"
#include "core/data/random.h"

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

// q_t (r rows of n) = Q (n x r) transposed, so that a pass over a row of M meets each column of Q
// as a contiguous run.
void Transpose(std::span<const float> q, std::size_t n, std::size_t r, std::vector<float>& q_t) {
  q_t.resize(r * n);
  for (std::size_t col = 0; col < n; ++col) {
    for (std::size_t k = 0; k < r; ++k) q_t[k * n + col] = q[col * r + k];
  }
}

// sum (n floats) = a row of P (r values) times Q^T, from Q transposed: each value's r products
// added in order k = 0, 1, ... from 0, along contiguous rows (the loop over columns vectorises).
inline void RowOfProduct(const float* p_row, const float* q_t, std::size_t n, std::size_t r,
                         float* sum) {
  std::fill_n(sum, n, 0.0f);
  for (std::size_t k = 0; k < r; ++k) {
    const float a = p_row[k];
    const float* b = &q_t[k * n];
    for (std::size_t col = 0; col < n; ++col) sum[col] += a * b[col];
  }
}

}  // namespace

// The passes over M come in two builds, picked when the program loads: one for any x86-64 and
// one for CPUs with AVX2. Both do the same float operations in the same order for each value (the
// vectors run across columns, and "avx2" leaves out fused multiply-adds), so they give the same
// bits; AVX2 only does eight at a time.
#define DTRAIN_PASS_OVER_M __attribute__((target_clones("avx2", "default")))

DTRAIN_PASS_OVER_M
void AddAndMultiplyByQ(std::span<const float> g, std::span<float> m_values, std::size_t m,
                       std::size_t n, std::span<const float> q, std::size_t r, std::span<float> p) {
  // Each row's r dot products kept in kLanes partial sums that the loop over a run of kLanes
  // columns fills side by side (it vectorises).
  constexpr std::size_t kLanes = 16;
  thread_local std::vector<float> q_t;
  Transpose(q, n, r, q_t);
  float partial[kMaxRank][kLanes];
  for (std::size_t row = 0; row < m; ++row) {
    float* values = &m_values[row * n];
    for (std::size_t k = 0; k < r; ++k) std::fill_n(partial[k], kLanes, 0.0f);
    for (std::size_t at = 0; at < n; at += kLanes) {
      const std::size_t lanes = std::min(kLanes, n - at);
      float v[kLanes] = {};
      for (std::size_t l = 0; l < lanes; ++l) {
        v[l] = g.empty() ? values[at + l] : values[at + l] + g[row * n + at + l];
        values[at + l] = v[l];
      }
      for (std::size_t k = 0; k < r; ++k) {
        const float* qk = &q_t[k * n + at];
        for (std::size_t l = 0; l < lanes; ++l) partial[k][l] += v[l] * qk[l];
      }
    }
    for (std::size_t k = 0; k < r; ++k) {
      float sum = 0.0f;
      for (const float x : partial[k]) sum += x;
      p[row * r + k] = sum;
    }
  }
}

DTRAIN_PASS_OVER_M
void MultiplyTransposedByP(std::span<const float> m_values, std::size_t m, std::size_t n,
                           std::span<const float> p, std::size_t r, std::span<float> q) {
  // Q transposed (r rows of n) grows row of M by row of M, two rows at a time (each sum still
  // adds its products row after row): each pass reads M once.
  thread_local std::vector<float> q_t;
  q_t.assign(r * n, 0.0f);
  std::size_t row = 0;
  for (; row + 1 < m; row += 2) {
    const float* first = &m_values[row * n];
    const float* second = first + n;
    for (std::size_t k = 0; k < r; ++k) {
      const float a = p[row * r + k], b = p[(row + 1) * r + k];
      float* qk = &q_t[k * n];
      for (std::size_t col = 0; col < n; ++col)
        qk[col] = (qk[col] + a * first[col]) + b * second[col];
    }
  }
  if (row < m) {
    const float* values = &m_values[row * n];
    for (std::size_t k = 0; k < r; ++k) {
      const float a = p[row * r + k];
      float* qk = &q_t[k * n];
      for (std::size_t col = 0; col < n; ++col) qk[col] += a * values[col];
    }
  }
  for (std::size_t col = 0; col < n; ++col) {
    for (std::size_t k = 0; k < r; ++k) q[col * r + k] = q_t[k * n + col];
  }
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

namespace {

// out (m x n) = P Q^T (add false) or out += scale * P Q^T (add true), row by row (RowOfProduct).
DTRAIN_PASS_OVER_M
void Product(std::span<const float> p, std::span<const float> q, std::size_t m, std::size_t n,
             std::size_t r, bool add, float scale, std::span<float> out) {
  thread_local std::vector<float> q_t, sums;
  Transpose(q, n, r, q_t);
  sums.resize(n);
  for (std::size_t row = 0; row < m; ++row) {
    float* o = &out[row * n];
    if (add) {
      RowOfProduct(&p[row * r], q_t.data(), n, r, sums.data());
      for (std::size_t col = 0; col < n; ++col) o[col] += scale * sums[col];
    } else {
      RowOfProduct(&p[row * r], q_t.data(), n, r, o);
    }
  }
}

}  // namespace

void AddProduct(std::span<const float> p, std::span<const float> q, std::size_t m, std::size_t n,
                std::size_t r, float scale, std::span<float> out) {
  Product(p, q, m, n, r, /*add=*/true, scale, out);
}

void WriteProduct(std::span<const float> p, std::span<const float> q, std::size_t m, std::size_t n,
                  std::size_t r, std::span<float> out) {
  Product(p, q, m, n, r, /*add=*/false, 1.0f, out);
}

DTRAIN_PASS_OVER_M
void SubtractProductWriteProduct(std::span<const float> p, std::span<const float> own_q,
                                 std::span<const float> mean_q, std::size_t m, std::size_t n,
                                 std::size_t r, std::span<float> m_values, std::span<float> out) {
  thread_local std::vector<float> own_t, mean_t, sums;
  Transpose(own_q, n, r, own_t);
  Transpose(mean_q, n, r, mean_t);
  sums.resize(n);
  for (std::size_t row = 0; row < m; ++row) {
    float* values = &m_values[row * n];
    RowOfProduct(&p[row * r], own_t.data(), n, r, sums.data());
    for (std::size_t col = 0; col < n; ++col) values[col] -= sums[col];
    RowOfProduct(&p[row * r], mean_t.data(), n, r, &out[row * n]);
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
