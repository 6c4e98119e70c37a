#include "core/compress/low_rank.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "core/compress/compression_plan.h"
#include "core/data/random.h"
#include "core/math/vector_width.h"

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

// Q (n x r) for the passes that keep their sums in registers: in blocks of kLanes columns, each
// block's r runs of kLanes values (column col, rank k at BlockAt(col, k, r)) side by side, so that
// a pass over a row of M meets Q as one stream; the last block padded with zeros.
inline std::size_t BlockAt(std::size_t col, std::size_t k, std::size_t r) {
  return ((col / kLanes) * r + k) * kLanes + col % kLanes;
}

void BlockTranspose(std::span<const float> q, std::size_t n, std::size_t r,
                    std::vector<float>& blocks) {
  blocks.assign((n + kLanes - 1) / kLanes * kLanes * r, 0.0f);
  for (std::size_t col = 0; col < n; ++col) {
    for (std::size_t k = 0; k < r; ++k) blocks[BlockAt(col, k, r)] = q[col * r + k];
  }
}

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

// kLanes floats as one value: each operation on them is the same on every float alone (one
// AVX-512 register, two AVX2 ones, four SSE ones).
using Lanes = float __attribute__((vector_size(4 * kLanes)));

// The helpers below are inlined into each build of a pass (they pass Lanes, whose registers
// differ between the builds).
#define DTRAIN_IN_PASS inline __attribute__((always_inline))

DTRAIN_IN_PASS void Load(Lanes& v, const float* at) { std::memcpy(&v, at, sizeof v); }

DTRAIN_IN_PASS void Store(float* at, const Lanes& v) { std::memcpy(at, &v, sizeof v); }

// How far ahead of its reads the first pass asks for M's and G's lines (16 lines): it reads two
// streams and writes a third, more than one core's hardware prefetchers keep in flight alone
// (bench/README.md, "What compressing a gradient costs", has the gain measured).
constexpr std::uintptr_t kPrefetchBytes = 1024;

// Asks for the cache line kPrefetchBytes past `at` (a prefetch never faults: past the end of
// the matrix it fetches nothing of use, and no pointer is formed there).
DTRAIN_IN_PASS void PrefetchAhead(const float* at) {
  __builtin_prefetch(
      reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(at) + kPrefetchBytes));
}

// One row of the first pass at rank R, every sum in registers: values -= the deferred row (p0_row
// times Q0 from deferred_b, when p0_row is set), += g_row (when set), then p_row[k] =
// DotInLanes(values, Q's column k) (Qs as BlockTranspose lays them out). Each value and each sum
// has the bits of RowOfProduct, the additions and DotInLanes done one after another.
template <std::size_t R>
DTRAIN_IN_PASS void FirstPassRow(const float* p0_row, const float* deferred_b, const float* g_row,
                                 const float* q_b, std::size_t n, float* values, float* p_row) {
  Lanes partial[R] = {};
  std::size_t at = 0;
  for (; at + kLanes <= n; at += kLanes) {
    Lanes v, b;
    PrefetchAhead(values + at);
    if (g_row != nullptr) PrefetchAhead(g_row + at);
    Load(v, values + at);
    if (p0_row != nullptr) {
      Lanes deferred = {};
      for (std::size_t k = 0; k < R; ++k) {
        Load(b, deferred_b + BlockAt(at, k, R));
        deferred += p0_row[k] * b;
      }
      v -= deferred;
    }
    if (g_row != nullptr) {
      Load(b, g_row + at);
      v += b;
    }
    Store(values + at, v);
    for (std::size_t k = 0; k < R; ++k) {
      Load(b, q_b + BlockAt(at, k, R));
      partial[k] += v * b;
    }
  }
  float lanes[R][kLanes];
  std::memcpy(lanes, partial, sizeof lanes);
  for (std::size_t l = 0; at + l < n; ++l) {
    const std::size_t col = at + l;
    float v = values[col];
    if (p0_row != nullptr) {
      float deferred = 0.0f;
      for (std::size_t k = 0; k < R; ++k) deferred += p0_row[k] * deferred_b[BlockAt(col, k, R)];
      v -= deferred;
    }
    if (g_row != nullptr) v += g_row[col];
    values[col] = v;
    for (std::size_t k = 0; k < R; ++k) lanes[k][l] += v * q_b[BlockAt(col, k, R)];
  }
  for (std::size_t k = 0; k < R; ++k) {
    float sum = 0.0f;
    for (const float x : lanes[k]) sum += x;
    p_row[k] = sum;
  }
}

// A row of P Q^T at rank R into out (not read), RowOfProduct's sums kept in registers and
// streamed past the caches where the CPU can.
template <std::size_t R>
DTRAIN_IN_PASS void ProductRow(const float* p_row, const float* q_b, std::size_t n, float* out) {
  std::size_t col = 0;
#if defined(__x86_64__)
  const bool aligned = reinterpret_cast<std::uintptr_t>(out) % 16 == 0;
#endif
  for (; col + kLanes <= n; col += kLanes) {
    Lanes sum = {}, b;
    for (std::size_t k = 0; k < R; ++k) {
      Load(b, q_b + BlockAt(col, k, R));
      sum += p_row[k] * b;
    }
#if defined(__x86_64__)
    if (aligned) {
      __m128 quarter[kLanes / 4];
      std::memcpy(quarter, &sum, sizeof quarter);
      for (std::size_t i = 0; i < kLanes / 4; ++i) _mm_stream_ps(out + col + 4 * i, quarter[i]);
      continue;
    }
#endif
    Store(out + col, sum);
  }
  for (; col < n; ++col) {
    float sum = 0.0f;
    for (std::size_t k = 0; k < R; ++k) sum += p_row[k] * q_b[BlockAt(col, k, R)];
    out[col] = sum;
  }
}

// Q^T (R rows of `width`, q_t) += P^T (R x rows, from p_rows: rows x R) times `rows` rows of M
// (x, n floats apart), every sum in registers across the rows: each value of Q^T adds its products
// row after row, as one row at a time would.
template <std::size_t R>
DTRAIN_IN_PASS void AddRowsTimesP(const float* x, std::size_t n, std::size_t rows,
                                  const float* p_rows, std::size_t width, float* q_t) {
  std::size_t col = 0;
  for (; col + kLanes <= width; col += kLanes) {
    Lanes sum[R], v;
    for (std::size_t k = 0; k < R; ++k) Load(sum[k], q_t + k * width + col);
    for (std::size_t row = 0; row < rows; ++row) {
      Load(v, x + row * n + col);
      for (std::size_t k = 0; k < R; ++k) sum[k] += p_rows[row * R + k] * v;
    }
    for (std::size_t k = 0; k < R; ++k) Store(q_t + k * width + col, sum[k]);
  }
  for (; col < width; ++col) {
    for (std::size_t k = 0; k < R; ++k) {
      float sum = q_t[k * width + col];
      for (std::size_t row = 0; row < rows; ++row) sum += p_rows[row * R + k] * x[row * n + col];
      q_t[k * width + col] = sum;
    }
  }
}

// The ranks whose sums the passes keep in registers (FirstPassRow, ProductRow); larger ranks take
// the plain loops.
constexpr std::size_t kMaxRankInRegisters = 4;

// FirstPassRow at rank r (<= kMaxRankInRegisters). A switch, not a lambda: a lambda's body is
// built for the default target, not for the pass's.
DTRAIN_IN_PASS void FirstPassRowAtRank(std::size_t r, const float* p0_row, const float* deferred_b,
                                       const float* g_row, const float* q_b, std::size_t n,
                                       float* values, float* p_row) {
  switch (r) {
    case 1:
      return FirstPassRow<1>(p0_row, deferred_b, g_row, q_b, n, values, p_row);
    case 2:
      return FirstPassRow<2>(p0_row, deferred_b, g_row, q_b, n, values, p_row);
    case 3:
      return FirstPassRow<3>(p0_row, deferred_b, g_row, q_b, n, values, p_row);
    default:
      return FirstPassRow<kMaxRankInRegisters>(p0_row, deferred_b, g_row, q_b, n, values, p_row);
  }
}

// AddRowsTimesP at rank r (<= kMaxRankInRegisters).
DTRAIN_IN_PASS void AddRowsTimesPAtRank(std::size_t r, const float* x, std::size_t n,
                                        std::size_t rows, const float* p_rows, std::size_t width,
                                        float* q_t) {
  switch (r) {
    case 1:
      return AddRowsTimesP<1>(x, n, rows, p_rows, width, q_t);
    case 2:
      return AddRowsTimesP<2>(x, n, rows, p_rows, width, q_t);
    case 3:
      return AddRowsTimesP<3>(x, n, rows, p_rows, width, q_t);
    default:
      return AddRowsTimesP<kMaxRankInRegisters>(x, n, rows, p_rows, width, q_t);
  }
}

// ProductRow at rank r (<= kMaxRankInRegisters).
DTRAIN_IN_PASS void ProductRowAtRank(std::size_t r, const float* p_row, const float* q_b,
                                     std::size_t n, float* out) {
  switch (r) {
    case 1:
      return ProductRow<1>(p_row, q_b, n, out);
    case 2:
      return ProductRow<2>(p_row, q_b, n, out);
    case 3:
      return ProductRow<3>(p_row, q_b, n, out);
    default:
      return ProductRow<kMaxRankInRegisters>(p_row, q_b, n, out);
  }
}

// Orders a pass's streamed stores (ProductRow) before any later load or store.
inline void StreamsDone() {
#if defined(__x86_64__)
  _mm_sfence();
#endif
}

}  // namespace

// On x86-64 the passes over M come in three builds, picked when the program loads
// (DTRAIN_AT_VECTOR_WIDTH): for AVX-512, for AVX2 and for any x86-64. All do the same float
// operations in the same order for each value (the vectors run across columns, and this file is
// built without fused multiply-adds), so they give the same bits; the wider ones only do more
// at a time.

DTRAIN_AT_VECTOR_WIDTH
void AddAndMultiplyByQ(std::span<const float> g, std::span<float> m_values, std::size_t m,
                       std::size_t n, std::span<const float> q, std::size_t r, std::span<float> p,
                       DeferredProduct subtract) {
  // A row of M loses its row of the deferred product and gets G's row added, then (in L1 cache)
  // its r dot products with Q's columns.
  thread_local std::vector<float> q_t, deferred_t, deferred_row;
  if (r <= kMaxRankInRegisters) {
    BlockTranspose(q, n, r, q_t);
    if (!subtract.p.empty()) BlockTranspose(subtract.q, n, r, deferred_t);
    for (std::size_t row = 0; row < m; ++row) {
      FirstPassRowAtRank(r, subtract.p.empty() ? nullptr : &subtract.p[row * r], deferred_t.data(),
                         g.empty() ? nullptr : &g[row * n], q_t.data(), n, &m_values[row * n],
                         &p[row * r]);
    }
    return;
  }
  Transpose(q, n, r, q_t);
  if (!subtract.p.empty()) {
    Transpose(subtract.q, n, r, deferred_t);
    deferred_row.resize(n);
  }
  for (std::size_t row = 0; row < m; ++row) {
    float* values = &m_values[row * n];
    if (!subtract.p.empty()) {
      // AddProduct's sums and its `values += -1.0f * sum`, which is values - sum to the bit.
      RowOfProduct(&subtract.p[row * r], deferred_t.data(), n, r, deferred_row.data());
      for (std::size_t col = 0; col < n; ++col) values[col] -= deferred_row[col];
    }
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

DTRAIN_AT_VECTOR_WIDTH
void MultiplyColumnsTransposedByP(std::span<const float> m_values, std::size_t m, std::size_t n,
                                  math::PartRange columns, std::span<const float> p, std::size_t r,
                                  std::span<float> q) {
  // Q's rows transposed (r rows of `width`) grow row of M by row of M, several rows at a time
  // (each sum still adds its products row after row): each pass reads M's columns once.
  const std::size_t width = columns.end - columns.begin;
  thread_local std::vector<float> q_t;
  q_t.assign(r * width, 0.0f);
  std::size_t row = 0;
  if (r <= kMaxRankInRegisters) {
    constexpr std::size_t kRowsAtATime = 8;
    for (; row < m; row += kRowsAtATime) {
      AddRowsTimesPAtRank(r, &m_values[row * n + columns.begin], n, std::min(kRowsAtATime, m - row),
                          &p[row * r], width, q_t.data());
    }
  }
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
DTRAIN_AT_VECTOR_WIDTH
void Product(std::span<const float> p, std::span<const float> q, std::size_t m, std::size_t n,
             std::size_t r, bool add, float scale, std::span<float> out) {
  thread_local std::vector<float> q_t, sums;
  if (!add && r <= kMaxRankInRegisters) {
    BlockTranspose(q, n, r, q_t);
    for (std::size_t row = 0; row < m; ++row) {
      ProductRowAtRank(r, &p[row * r], q_t.data(), n, &out[row * n]);
    }
    StreamsDone();
    return;
  }
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

void InitialQ(std::uint64_t seed, std::span<float> q) {
  data::SplitMix64 rng(seed);
  for (float& x : q) {
    // 24 random bits: u / 2^23 - 1 is exact in a float and lies in [-1, 1).
    const auto u = static_cast<float>(rng.Next() >> 40);
    x = u * 0x1.0p-23f - 1.0f;
  }
}

}  // namespace dtrain::compress
