// GEMM and BLAS thread control: the one place dtrain calls OpenBLAS.
//
//   Gemm(Trans::kNo, Trans::kYes, m, n, k, 1.f, a, lda, b, ldb, 0.f, c, ldc);  // C = A * B^T
//
// All matrices are row-major. SetBlasThreads must be called once per process before training
// (dtrain never lets OpenBLAS pick its own thread count). Gemm is safe for concurrent use on
// disjoint outputs; SetBlasThreads is process-wide. Gemm runs through OpenBLAS or oneDNN's sgemm
// (GemmBackend below): the same products up to float rounding, on the same threads. Where the
// process's precision is bf16 (precision.h) every product runs through oneDNN's bf16 matmul
// instead, its inputs rounded to bf16 (dnnl_gemm.h).
#pragma once

#include <string>

namespace dtrain::math {

enum class Trans { kNo, kYes };

// Which library runs Gemm in this process, chosen at the first Gemm and fixed (so a run repeats
// bit for bit on the same CPU): the environment's DTRAIN_GEMM, "onednn" or "openblas" (any other
// value: OpenBLAS); unset, empty or "auto", by this CPU: oneDNN's sgemm where oneDNN runs its
// AVX-512 kernels (the MLP's step 1.1-1.2x faster than through OpenBLAS on Zen 5 and Sapphire
// Rapids, bench/README.md), OpenBLAS elsewhere. SetGemmBackend overrides it (tests, benchmarks).
enum class GemmBackend { kOpenBlas, kOnednn };
GemmBackend CurrentGemmBackend();
void SetGemmBackend(GemmBackend backend);
// The line a job logs about it: "matrix products: oneDNN's sgemm (this CPU has AVX-512)",
// "... OpenBLAS, Haswell kernels (DTRAIN_GEMM=openblas)", or bf16's matmul where the process's
// precision is bf16.
std::string DescribeGemm();

// C[m x n] = alpha * op(A)[m x k] * op(B)[k x n] + beta * C, row-major.
void Gemm(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc);

// Seconds this thread has spent in Gemm since its previous call: the GEMM share of a step, for
// benchmarks and profiles.
double TakeGemmSeconds();

// Sets OpenBLAS's thread count for this process (>= 1).
void SetBlasThreads(int threads);
int BlasThreads();

// Runs one product large enough to engage every BLAS thread, so that OpenBLAS takes its buffers
// (128 MiB of address space per thread) now and keeps them. Under an address-space limit a
// buffer OpenBLAS cannot get later makes it retry forever, where this process's own allocations
// fail with a message; so a limited process calls this after SetBlasThreads, before anything big.
void ReserveBlasBuffers();

}  // namespace dtrain::math
