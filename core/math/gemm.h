// GEMM and BLAS thread control: the one place dtrain calls OpenBLAS.
//
//   Gemm(Trans::kNo, Trans::kYes, m, n, k, 1.f, a, lda, b, ldb, 0.f, c, ldc);  // C = A * B^T
//
// All matrices are row-major. SetBlasThreads must be called once per process before training
// (dtrain never lets OpenBLAS pick its own thread count). Gemm is safe for concurrent use on
// disjoint outputs; SetBlasThreads is process-wide. Gemm runs through OpenBLAS, or through
// oneDNN's sgemm where the process asks for it (DTRAIN_GEMM=onednn, read once, or
// SetGemmBackend): the same products up to float rounding, on the same threads. Where the
// process's precision is bf16 (precision.h) every product runs through oneDNN's bf16 matmul
// instead, its inputs rounded to bf16 (dnnl_gemm.h).
#pragma once

namespace dtrain::math {

enum class Trans { kNo, kYes };

// Which library runs Gemm in this process: OpenBLAS unless the environment's DTRAIN_GEMM says
// "onednn" (read at the first Gemm) or SetGemmBackend chose (tests, benchmarks).
enum class GemmBackend { kOpenBlas, kOnednn };
GemmBackend CurrentGemmBackend();
void SetGemmBackend(GemmBackend backend);

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
