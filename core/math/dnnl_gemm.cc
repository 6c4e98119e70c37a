#include "core/math/dnnl_gemm.h"

#include "core/math/dnnl_runtime.h"

namespace dtrain::math {

bool OnednnGemm(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a,
                int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  dnnl_runtime::UseJobThreads();
  return dnnl_sgemm(trans_a == Trans::kYes ? 'T' : 'N', trans_b == Trans::kYes ? 'T' : 'N', m, n, k,
                    alpha, a, lda, b, ldb, beta, c, ldc) == dnnl_success;
}

}  // namespace dtrain::math
