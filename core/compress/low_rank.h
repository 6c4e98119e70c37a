// The matrix algebra of PowerSGD (Vogels et al. 2019) for one m x n gradient matrix M (row-major)
// and rank r: P = M Q (m x r), orthonormal columns of P, Q = M^T P (n x r), M ~ P Q^T.
//
//   AddAndMultiplyByQ(G, M, m, n, Q, r, P);  // M += G, P = M Q   (a replica's own M)
//   Orthonormalize(P, m, r);         // Gram-Schmidt   (on the replicas' mean: same bits anywhere)
//   MultiplyTransposedByP(M, m, n, P, r, Q);
//   AddProduct(P, Q, m, n, r, 1.0f, out);  // out += P Q^T (deterministic loops)
//
// Orthonormalize and AddProduct run on values every replica holds alike, and give the same bits
// wherever the same binary runs (plain loops in a fixed order, no runtime-dispatched kernel, so
// no CPU-dependent rounding: every host of a job runs the same build); the two thin
// products run on a replica's own values, each in one pass over M (memory-bound: BLAS would
// first copy M into panels). Matrices are row-major, leading dimension = columns.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace dtrain::compress {

// M (m x n) += G (the same shape; empty: nothing added), then P (m x r) = M Q (n x r), in one
// pass over M. r <= kMaxRank.
void AddAndMultiplyByQ(std::span<const float> g, std::span<float> m_values, std::size_t m,
                       std::size_t n, std::span<const float> q, std::size_t r, std::span<float> p);
// Q (n x r) = M^T (n x m) P (m x r).
void MultiplyTransposedByP(std::span<const float> m_values, std::size_t m, std::size_t n,
                           std::span<const float> p, std::size_t r, std::span<float> q);
// P's columns (m x r) made orthonormal by modified Gram-Schmidt, left to right; a column that is
// (numerically) zero after its projections out — at most 1e-4 of its norm before them, rounding
// noise of a dependent column — becomes all zeros.
void Orthonormalize(std::span<float> p, std::size_t m, std::size_t r);
// out (m x n) += scale * P (m x r) Q^T (r x n).
void AddProduct(std::span<const float> p, std::span<const float> q, std::size_t m, std::size_t n,
                std::size_t r, float scale, std::span<float> out);
// out (m x n) = P (m x r) Q^T (r x n): AddProduct's sums, written instead of added.
void WriteProduct(std::span<const float> p, std::span<const float> q, std::size_t m, std::size_t n,
                  std::size_t r, std::span<float> out);
// Q's initial values: n x r floats uniform in [-1, 1) from `seed`, the same on every replica and
// CPU.
void InitialQ(std::uint64_t seed, std::span<float> q);

}  // namespace dtrain::compress
