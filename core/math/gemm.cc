#include "core/math/gemm.h"

#include <cblas.h>

#include <chrono>
#include <vector>

namespace dtrain::math {
namespace {

using Clock = std::chrono::steady_clock;
thread_local Clock::duration gemm_time{};

}  // namespace

void Gemm(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc) {
  const Clock::time_point start = Clock::now();
  cblas_sgemm(CblasRowMajor, trans_a == Trans::kYes ? CblasTrans : CblasNoTrans,
              trans_b == Trans::kYes ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb,
              beta, c, ldc);
  gemm_time += Clock::now() - start;
}

double TakeGemmSeconds() {
  const double seconds = std::chrono::duration<double>(gemm_time).count();
  gemm_time = {};
  return seconds;
}

void SetBlasThreads(int threads) { openblas_set_num_threads(threads < 1 ? 1 : threads); }

int BlasThreads() { return openblas_get_num_threads(); }

void ReserveBlasBuffers() {
  constexpr int kSide = 256;  // 2^24 multiply-adds: above OpenBLAS's threshold for threads
  std::vector<float> a(kSide * kSide, 1.0f), c(kSide * kSide);
  Gemm(Trans::kNo, Trans::kNo, kSide, kSide, kSide, 1.0f, a.data(), kSide, a.data(), kSide, 0.0f,
       c.data(), kSide);
}

}  // namespace dtrain::math
