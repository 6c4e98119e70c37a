// oneDNN's matrix products for math::Gemm: its single-precision GEMM (dnnl_sgemm) where a process
// runs its float products through oneDNN (gemm.h's GemmBackend), and its bf16 matmul where
// the process's precision is bf16 (precision.h). Row-major like Gemm; runs with the job's BLAS
// thread count (math::BlasThreads()) as OpenMP threads of the calling thread, so concurrent calls
// from a row-split pass's threads each stay on their own thread. Kept apart from gemm.cc so that
// only this file and dnnl_runtime.cc see oneDNN's headers.
#pragma once

#include "core/math/gemm.h"

namespace dtrain::math {

// Whether oneDNN runs its AVX-512 kernels here (avx512_core or above: the CPU has them and
// DNNL_MAX_CPU_ISA does not cap it below).
bool OnednnRunsAvx512();

// C = alpha * op(A) * op(B) + beta * C through oneDNN; false (C untouched) where oneDNN refuses
// the arguments, which Gemm then hands to OpenBLAS.
bool OnednnGemm(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a,
                int lda, const float* b, int ldb, float beta, float* c, int ldc);

// The same with op(A) and op(B) rounded to bf16 (math::ToBf16) and multiplied by oneDNN's bf16
// matmul, summed in float: only where NativeBf16() (precision.h). One primitive is made per
// product shape, alpha, beta and thread count a process runs (a few per layer), and kept; false
// (C untouched) for an empty product or where oneDNN has no kernel.
bool OnednnGemmBf16(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a,
                    int lda, const float* b, int ldb, float beta, float* c, int ldc);

}  // namespace dtrain::math
