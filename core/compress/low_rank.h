// The matrix algebra of PowerSGD (Vogels et al. 2019) for one m x n gradient matrix M (row-major)
// and rank r: P = M Q (m x r), orthonormal columns of P, Q = M^T P (n x r), M ~ P Q^T.
//
//   AddAndMultiplyByQ(G, M, m, n, Q, r, P, {P0, Q0});  // M -= P0 Q0^T, M += G, P = M Q
//   Orthonormalize(P, m, r);         // Gram-Schmidt   (on the replicas' mean: same bits anywhere)
//   MultiplyTransposedByP(M, m, n, P, r, Q);
//   WriteProduct(P, mean Q, m, n, r, out);  // out = P (mean Q)^T
//   AddProduct(P, Q, m, n, r, 1.0f, out);  // out += P Q^T
//
// Every function gives the same bits wherever the same binary runs (every host of a job runs the
// same build): plain loops in a fixed order, no library kernel. On x86-64 the passes over M have
// builds for AVX-512 and AVX2 picked at load time, with the same float operations in the same order
// (vectors across columns, no fused multiply-adds), so their bits are the default build's. Each of
// them reads M once (BLAS would first copy M into panels). Matrices are row-major,
// leading dimension = columns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "core/math/part_range.h"

namespace dtrain::compress {

// P (m x r) Q^T (r x n) for a pass over M to subtract first: PowerSGD's residual M - P Q^T of a
// step, left to the next step's first pass so that no pass over M is spent on it alone. Empty:
// nothing to subtract.
struct DeferredProduct {
  std::span<const float> p, q;
};

// M (m x n) -= the deferred P Q^T (the bits of AddProduct(p, q, m, n, r, -1.0f, M)), then M += G
// (the same shape; empty: nothing added), then P (m x r) = M Q (n x r), all in one pass over M.
// r <= kMaxRank.
void AddAndMultiplyByQ(std::span<const float> g, std::span<float> m_values, std::size_t m,
                       std::size_t n, std::span<const float> q, std::size_t r, std::span<float> p,
                       DeferredProduct subtract = {});
// Q (n x r) = M^T (n x m) P (m x r).
void MultiplyTransposedByP(std::span<const float> m_values, std::size_t m, std::size_t n,
                           std::span<const float> p, std::size_t r, std::span<float> q);
// Q's rows [columns.begin, columns.end) of MultiplyTransposedByP (from M's columns there), with
// its bits: threads that share Q's rows out among them get what one thread gets. The rest of Q
// is left as it is.
void MultiplyColumnsTransposedByP(std::span<const float> m_values, std::size_t m, std::size_t n,
                                  math::PartRange columns, std::span<const float> p, std::size_t r,
                                  std::span<float> q);
// P's columns (m x r) made orthonormal by modified Gram-Schmidt, left to right; a column that is
// (numerically) zero after its projections out — at most 1e-4 of its norm before them, rounding
// noise of a dependent column — becomes all zeros.
void Orthonormalize(std::span<float> p, std::size_t m, std::size_t r);
// out (m x n) += scale * P (m x r) Q^T (r x n).
void AddProduct(std::span<const float> p, std::span<const float> q, std::size_t m, std::size_t n,
                std::size_t r, float scale, std::span<float> out);
// out (m x n) = P (m x r) Q^T (r x n): AddProduct's sums, written instead of added (on x86-64
// past the caches: out is not read before the pass ends, so it is not fetched either).
void WriteProduct(std::span<const float> p, std::span<const float> q, std::size_t m, std::size_t n,
                  std::size_t r, std::span<float> out);
// Q's initial values: n x r floats uniform in [-1, 1) from `seed`, the same on every replica and
// CPU.
void InitialQ(std::uint64_t seed, std::span<float> q);

}  // namespace dtrain::compress
