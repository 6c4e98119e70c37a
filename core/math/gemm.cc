#include "core/math/gemm.h"

#include <cblas.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/math/dnnl_gemm.h"
#include "core/math/precision.h"

namespace dtrain::math {
namespace {

using Clock = std::chrono::steady_clock;
thread_local Clock::duration gemm_time{};

// The backend and why it was chosen.
struct Choice {
  GemmBackend backend = GemmBackend::kOpenBlas;
  std::string why;
};

Choice FromEnvironment() {
  const char* name = std::getenv("DTRAIN_GEMM");
  const std::string_view value = name != nullptr ? name : "";
  if (value.empty() || value == "auto") {
    if (OnednnRunsAvx512()) return {GemmBackend::kOnednn, "this CPU has AVX-512"};
    return {GemmBackend::kOpenBlas, "no AVX-512 kernels on this CPU"};
  }
  const std::string why = "DTRAIN_GEMM=" + std::string(value);
  return {value == "onednn" ? GemmBackend::kOnednn : GemmBackend::kOpenBlas, why};
}

// The process's backend, and the environment's choice it started as (which DescribeGemm names
// while the backend is still that one).
struct Chosen {
  std::atomic<GemmBackend> backend;
  const Choice by_environment;
};

Chosen& Backend() {
  static Chosen chosen = [] {
    Choice c = FromEnvironment();
    return Chosen{c.backend, std::move(c)};
  }();
  return chosen;
}

}  // namespace

GemmBackend CurrentGemmBackend() { return Backend().backend.load(std::memory_order_relaxed); }

void SetGemmBackend(GemmBackend backend) {
  Backend().backend.store(backend, std::memory_order_relaxed);
}

std::string DescribeGemm() {
  if (CurrentPrecision() == Precision::kBf16) {
    return "matrix products: oneDNN's bf16 matmul (train.precision = \"bf16\")";
  }
  const Chosen& chosen = Backend();
  const GemmBackend backend = chosen.backend.load(std::memory_order_relaxed);
  const std::string what = backend == GemmBackend::kOnednn
                               ? "oneDNN's sgemm"
                               : std::string("OpenBLAS, ") + openblas_get_corename() + " kernels";
  const Choice& started = chosen.by_environment;
  return "matrix products: " + what + " (" +
         (backend == started.backend ? started.why : "set by the program") + ")";
}

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
  // OpenBLAS's own, whichever backend Gemm uses: it hands OpenBLAS what oneDNN refuses.
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, kSide, kSide, kSide, 1.0f, a.data(), kSide,
              a.data(), kSide, 0.0f, c.data(), kSide);
}

}  // namespace dtrain::math
