#include "core/math/dnnl_gemm.h"

#include <compare>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "core/math/bf16.h"
#include "core/math/dnnl_runtime.h"

namespace dtrain::math {
namespace {

using namespace dnnl_runtime;
using Type = memory::data_type;

// What a bf16 matmul primitive is made for.
struct MatmulShape {
  int m = 0, n = 0, k = 0;
  bool trans_a = false, trans_b = false;
  int ldc = 0;
  float alpha = 1, beta = 0;
  int threads = 1;
  auto operator<=>(const MatmulShape&) const = default;
};

// C[m x n] (row stride ldc, float) = alpha * op(A) * op(B) + beta * C, op(A) and op(B) dense bf16
// as they are stored: A is [m x k] (or [k x m] transposed), B [k x n] (or [n x k]).
struct Bf16Matmul {
  memory::desc a, b, c;
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul primitive;

  explicit Bf16Matmul(const MatmulShape& s)
      : a({s.m, s.k}, Type::bf16, s.trans_a ? memory::dims{1, s.m} : memory::dims{s.k, 1}),
        b({s.k, s.n}, Type::bf16, s.trans_b ? memory::dims{1, s.k} : memory::dims{s.n, 1}),
        c({s.m, s.n}, Type::f32, memory::dims{s.ldc, 1}) {
    dnnl::primitive_attr attr = UserScratchpad();
    if (s.alpha != 1) attr.set_output_scales(0, {s.alpha});
    if (s.beta != 0) {
      dnnl::post_ops sum;
      sum.append_sum(s.beta);
      attr.set_post_ops(sum);
    }
    pd = {{a, b, c}, attr, Cpu()};
    primitive = dnnl::matmul(pd);
  }
};

// Made once per shape (null where oneDNN has no kernel), kept for the life of the process.
const Bf16Matmul* MatmulFor(const MatmulShape& shape) {
  static std::mutex mutex;
  static std::map<MatmulShape, std::unique_ptr<Bf16Matmul>> made;
  const std::lock_guard lock(mutex);
  auto [at, is_new] = made.try_emplace(shape);
  if (is_new) {
    try {
      at->second = std::make_unique<Bf16Matmul>(shape);
    } catch (const dnnl::error&) {
      at->second = nullptr;
    }
  }
  return at->second.get();
}

// The stored rows x cols block at `data` (row stride ld), dense as bf16 in this thread's `slot`.
memory Rounded(const memory::desc& desc, const float* data, int rows, int cols, int ld, Slot slot) {
  auto* out = static_cast<std::uint16_t*>(ThreadBytes(slot, desc.get_size()));
  ToBf16Rows(data, rows, cols, ld, out);
  return memory(desc, Cpu(), out);
}

}  // namespace

bool OnednnRunsAvx512() {
  // oneDNN's ISAs are nested bit sets: every one from avx512_core up has its bits.
  const unsigned isa = dnnl_get_effective_cpu_isa();
  return (isa & dnnl_cpu_isa_avx512_core) == dnnl_cpu_isa_avx512_core;
}

bool OnednnGemm(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a,
                int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  UseJobThreads();
  return dnnl_sgemm(trans_a == Trans::kYes ? 'T' : 'N', trans_b == Trans::kYes ? 'T' : 'N', m, n, k,
                    alpha, a, lda, b, ldb, beta, c, ldc) == dnnl_success;
}

bool OnednnGemmBf16(Trans trans_a, Trans trans_b, int m, int n, int k, float alpha, const float* a,
                    int lda, const float* b, int ldb, float beta, float* c, int ldc) {
  if (m <= 0 || n <= 0 || k <= 0) return false;
  const bool ta = trans_a == Trans::kYes, tb = trans_b == Trans::kYes;
  const Bf16Matmul* p = MatmulFor({m, n, k, ta, tb, ldc, alpha, beta, UseJobThreads()});
  if (p == nullptr) return false;
  Run(p->primitive, p->pd,
      {{DNNL_ARG_SRC, Rounded(p->a, a, ta ? k : m, ta ? m : k, lda, kBf16Left)},
       {DNNL_ARG_WEIGHTS, Rounded(p->b, b, tb ? n : k, tb ? k : n, ldb, kBf16Right)},
       {DNNL_ARG_DST, Wrap(p->c, c)}});
  return true;
}

}  // namespace dtrain::math
