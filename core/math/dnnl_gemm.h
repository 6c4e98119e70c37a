// oneDNN's single-precision GEMM (dnnl_sgemm), for math::Gemm where a process runs its products
// through oneDNN (DTRAIN_GEMM=onednn, gemm.h). Row-major like Gemm; runs with the job's BLAS
// thread count (math::BlasThreads()) as OpenMP threads of the calling thread, so concurrent calls
// from a row-split pass's threads each stay on their own thread. Kept apart from gemm.cc so that
// only this file and dnnl_runtime.cc see oneDNN's headers.
#pragma once

#include "core/math/gemm.h"

namespace dtrain::math {

// C = alpha * op(A) * op(B) + beta * C through oneDNN; false (C untouched) where oneDNN refuses
// the arguments, which Gemm then hands to OpenBLAS.
bool OnednnGemm(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a,
                int lda, const float* b, int ldb, float beta, float* c, int ldc);

}  // namespace dtrain::math
