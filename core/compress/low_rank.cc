#include "core/compress/low_rank.h"

#include <algorithm>
#include <cmath>
#include <cstring>
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

// The vector width the passes over M are written for: runs of this many columns side by side.
constexpr std::size_t kLanes = 16;

// The dot product of two runs of n floats in kLanes partial sums (lane l adds the products of
// columns l, l + kLanes, ... in order), then the lanes added in order.
inline float DotInLanes(const float* a, const float* b, std::size_t n) {
  float partial[kLanes] = {};
  std::size_t at = 0;
  for (; at + kLanes <= n; at += kLanes) {
    for (std::size_t l = 0; l < kLanes; ++l) partial[l] += a[at + l] * b[at + l];
  }
  for (std::size_t l = 0; at + l < n; ++l) partial[l] += a[at + l] * b[at + l];
  float sum = 0.0f;
  for (const float x : partial) sum += x;
  return sum;
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

// Eight floats as one value: each operation on them is the same on every float alone.
using Eight = float __attribute__((vector_size(32)));

// kLanes columns of a row of M (values, out, and Q's columns from own_t and mean_t, r rows n
// apart, start at them): values -= the row of P times own Q^T, out = it times mean Q^T; each sum
// RowOfProduct's, kept in registers.
inline void SubtractAndWriteRun(const float* p_row, const float* own_t, const float* mean_t,
                                std::size_t n, std::size_t r, float* values, float* out) {
  constexpr std::size_t kRuns = kLanes / 8;
  Eight own[kRuns] = {}, mean[kRuns] = {};
  for (std::size_t k = 0; k < r; ++k) {
    const float a = p_row[k];
    for (std::size_t run = 0; run < kRuns; ++run) {
      Eight o, m;
      std::memcpy(&o, own_t + k * n + 8 * run, sizeof o);
      std::memcpy(&m, mean_t + k * n + 8 * run, sizeof m);
      own[run] += a * o;
      mean[run] += a * m;
    }
  }
  for (std::size_t run = 0; run < kRuns; ++run) {
    Eight v;
    std::memcpy(&v, values + 8 * run, sizeof v);
    v -= own[run];
    std::memcpy(values + 8 * run, &v, sizeof v);
    std::memcpy(out + 8 * run, &mean[run], sizeof v);
  }
}

}  // namespace

// On x86-64 the passes over M come in two builds, picked when the program loads: one for any
// x86-64 and one for CPUs with AVX2. Both do the same float operations in the same order for each
// value (the vectors run across columns, and "avx2" leaves out fused multiply-adds), so they give
// the same bits; AVX2 only does eight at a time.
#if defined(__x86_64__)
#define DTRAIN_PASS_OVER_M __attribute__((target_clones("avx2", "default")))
#else
#define DTRAIN_PASS_OVER_M
#endif

DTRAIN_PASS_OVER_M
void AddAndMultiplyByQ(std::span<const float> g, std::span<float> m_values, std::size_t m,
                       std::size_t n, std::span<const float> q, std::size_t r, std::span<float> p) {
  // A row of M gets G's row added, then (in L1 cache) its r dot products with Q's columns.
  thread_local std::vector<float> q_t;
  Transpose(q, n, r, q_t);
  for (std::size_t row = 0; row < m; ++row) {
    float* values = &m_values[row * n];
    if (!g.empty()) {
      const float* add = &g[row * n];
      for (std::size_t col = 0; col < n; ++col) values[col] += add[col];
    }
    for (std::size_t k = 0; k < r; ++k) p[row * r + k] = DotInLanes(values, &q_t[k * n], n);
  }
}

void MultiplyTransposedByP(std::span<const float> m_values, std::size_t m, std::size_t n,
                           std::span<const float> p, std::size_t r, std::span<float> q) {
  MultiplyColumnsTransposedByP(m_values, m, n, {0, n}, p, r, q);
}

DTRAIN_PASS_OVER_M
void MultiplyColumnsTransposedByP(std::span<const float> m_values, std::size_t m, std::size_t n,
                                  math::PartRange columns, std::span<const float> p, std::size_t r,
                                  std::span<float> q) {
  // Q's rows transposed (r rows of `width`) grow row of M by row of M, four rows at a time (each
  // sum still adds its products row after row): each pass reads M's columns once.
  const std::size_t width = columns.end - columns.begin;
  thread_local std::vector<float> q_t;
  q_t.assign(r * width, 0.0f);
  std::size_t row = 0;
  for (; row + 4 <= m; row += 4) {
    const float* x = &m_values[row * n + columns.begin];
    for (std::size_t k = 0; k < r; ++k) {
      const float a0 = p[row * r + k], a1 = p[(row + 1) * r + k], a2 = p[(row + 2) * r + k],
                  a3 = p[(row + 3) * r + k];
      float* qk = &q_t[k * width];
      for (std::size_t col = 0; col < width; ++col) {
        qk[col] = (((qk[col] + a0 * x[col]) + a1 * x[n + col]) + a2 * x[2 * n + col]) +
                  a3 * x[3 * n + col];
      }
    }
  }
  for (; row < m; ++row) {
    const float* values = &m_values[row * n + columns.begin];
    for (std::size_t k = 0; k < r; ++k) {
      const float a = p[row * r + k];
      float* qk = &q_t[k * width];
      for (std::size_t col = 0; col < width; ++col) qk[col] += a * values[col];
    }
  }
  for (std::size_t col = 0; col < width; ++col) {
    for (std::size_t k = 0; k < r; ++k) q[(columns.begin + col) * r + k] = q_t[k * width + col];
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
  thread_local std::vector<float> own_t, mean_t;
  Transpose(own_q, n, r, own_t);
  Transpose(mean_q, n, r, mean_t);
  for (std::size_t row = 0; row < m; ++row) {
    const float* p_row = &p[row * r];
    float* values = &m_values[row * n];
    float* o = &out[row * n];
    std::size_t col = 0;
    for (; col + kLanes <= n; col += kLanes) {
      SubtractAndWriteRun(p_row, &own_t[col], &mean_t[col], n, r, values + col, o + col);
    }
    for (; col < n; ++col) {
      float own = 0.0f, mean = 0.0f;
      for (std::size_t k = 0; k < r; ++k) {
        own += p_row[k] * own_t[k * n + col];
        mean += p_row[k] * mean_t[k * n + col];
      }
      values[col] -= own;
      o[col] = mean;
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
