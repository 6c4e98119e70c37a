#include "core/math/gemm.h"

#include <cblas.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string_view>
#include <vector>

#include "core/math/dnnl_gemm.h"
#include "core/math/precision.h"

namespace dtrain::math {
namespace {

using Clock = std::chrono::steady_clock;
thread_local Clock::duration gemm_time{};

GemmBackend BackendFromEnvironment() {
  const char* name = std::getenv("DTRAIN_GEMM");
  return name != nullptr && std::string_view(name) == "onednn" ? GemmBackend::kOnednn
                                                               : GemmBackend::kOpenBlas;
}

std::atomic<GemmBackend>& Backend() {
  static std::atomic<GemmBackend> backend{BackendFromEnvironment()};
  return backend;
}

}  // namespace

GemmBackend CurrentGemmBackend() { return Backend().load(std::memory_order_relaxed); }

void SetGemmBackend(GemmBackend backend) { Backend().store(backend, std::memory_order_relaxed); }

void Gemm(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a, int lda,
          const float* b, int ldb, float beta, float* c, int ldc) {
  const Clock::time_point start = Clock::now();
  const bool by_onednn =
      CurrentPrecision() == Precision::kBf16
          ? OnednnGemmBf16(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
          : CurrentGemmBackend() == GemmBackend::kOnednn &&
                OnednnGemm(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  if (!by_onednn) {
    cblas_sgemm(CblasRowMajor, trans_a == Trans::kYes ? CblasTrans : CblasNoTrans,
                trans_b == Trans::kYes ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b, ldb,
                beta, c, ldc);
  }
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
