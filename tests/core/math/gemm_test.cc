// GEMM and elementwise kernels against naive loops.
#include "core/math/gemm.h"

#include <algorithm>
#include <bit>
#include <boost/test/unit_test.hpp>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "core/math/buffer.h"
#include "core/math/elementwise.h"

namespace dtrain::math {
namespace gemm_test {

FloatBuffer Random(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  FloatBuffer v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

BOOST_AUTO_TEST_SUITE(math)

BOOST_AUTO_TEST_CASE(buffers_are_cache_line_aligned) {
  for (std::size_t n : {1u, 3u, 17u, 1000u}) {
    FloatBuffer b(n);
    BOOST_TEST(reinterpret_cast<std::uintptr_t>(b.data()) % kBufferAlignment == 0u);
  }
}

// Runs `body` with each GEMM backend in turn, then restores the process's own.
template <typename Body>
void UnderEachBackend(Body&& body) {
  const GemmBackend own = CurrentGemmBackend();
  for (GemmBackend backend : {GemmBackend::kOpenBlas, GemmBackend::kOnednn}) {
    SetGemmBackend(backend);
    BOOST_TEST_CONTEXT("backend " << (backend == GemmBackend::kOnednn ? "onednn" : "openblas")) {
      body();
    }
  }
  SetGemmBackend(own);
}

BOOST_AUTO_TEST_CASE(gemm_matches_naive_for_every_transpose) {
  UnderEachBackend([] {
    const int m = 7, n = 5, k = 9;
    for (Trans ta : {Trans::kNo, Trans::kYes}) {
      for (Trans tb : {Trans::kNo, Trans::kYes}) {
        FloatBuffer a = Random(m * k, 1), b = Random(k * n, 2), c = Random(m * n, 3);
        FloatBuffer expected(c);
        for (int i = 0; i < m; ++i) {
          for (int j = 0; j < n; ++j) {
            double sum = 0;
            for (int p = 0; p < k; ++p) {
              const float av = ta == Trans::kNo ? a[i * k + p] : a[p * m + i];
              const float bv = tb == Trans::kNo ? b[p * n + j] : b[j * k + p];
              sum += static_cast<double>(av) * bv;
            }
            expected[i * n + j] = static_cast<float>(2.0 * sum + 0.5 * expected[i * n + j]);
          }
        }
        Gemm(ta, tb, m, n, k, 2.0f, a.data(), ta == Trans::kNo ? k : m, b.data(),
             tb == Trans::kNo ? n : k, 0.5f, c.data(), n);
        for (int i = 0; i < m * n; ++i)
          BOOST_TEST(c[i] == expected[i], boost::test_tools::tolerance(1e-5f));
      }
    }
  });
}

// oneDNN's products against OpenBLAS's on the shapes a layer's passes take (odd sizes, row
// slices, leading dimensions wider than the matrix, beta 0 and 1): equal up to float rounding.
BOOST_AUTO_TEST_CASE(onednn_gemm_gives_openblas_products_up_to_rounding) {
  const GemmBackend own = CurrentGemmBackend();
  std::mt19937 rng(11);
  for (int round = 0; round < 24; ++round) {
    const int m = 1 + static_cast<int>(rng() % 130), n = 1 + static_cast<int>(rng() % 70),
              k = 1 + static_cast<int>(rng() % 300), pad = static_cast<int>(rng() % 3);
    const Trans ta = rng() % 2 ? Trans::kYes : Trans::kNo,
                tb = rng() % 2 ? Trans::kYes : Trans::kNo;
    const float beta = round % 2 ? 1.0f : 0.0f;
    const int lda = (ta == Trans::kNo ? k : m) + pad, ldb = (tb == Trans::kNo ? n : k) + pad,
              ldc = n + pad;
    const FloatBuffer a =
        Random(static_cast<std::size_t>(ta == Trans::kNo ? m : k) * lda, 20 + round);
    const FloatBuffer b =
        Random(static_cast<std::size_t>(tb == Trans::kNo ? k : n) * ldb, 50 + round);
    const FloatBuffer c0 = Random(static_cast<std::size_t>(m) * ldc, 80 + round);
    FloatBuffer by_openblas(c0), by_onednn(c0);
    SetGemmBackend(GemmBackend::kOpenBlas);
    Gemm(ta, tb, m, n, k, 0.5f, a.data(), lda, b.data(), ldb, beta, by_openblas.data(), ldc);
    SetGemmBackend(GemmBackend::kOnednn);
    Gemm(ta, tb, m, n, k, 0.5f, a.data(), lda, b.data(), ldb, beta, by_onednn.data(), ldc);
    float largest = 0.0f;
    for (float v : by_openblas) largest = std::max(largest, std::abs(v));
    BOOST_TEST_CONTEXT("m " << m << " n " << n << " k " << k << " round " << round) {
      for (std::size_t i = 0; i < by_openblas.size(); ++i) {
        BOOST_TEST(std::abs(by_onednn[i] - by_openblas[i]) <= 1e-5f * std::max(1.0f, largest));
      }
    }
  }
  SetGemmBackend(own);
}

BOOST_AUTO_TEST_CASE(blas_thread_count_is_set_explicitly) {
  SetBlasThreads(1);
  BOOST_TEST(BlasThreads() == 1);
  SetBlasThreads(0);  // clamped, never "let OpenBLAS decide"
  BOOST_TEST(BlasThreads() == 1);
}

BOOST_AUTO_TEST_CASE(bias_and_activations_match_their_definitions) {
  const int rows = 3, cols = 4;
  FloatBuffer bias = Random(cols, 5);
  for (Activation act :
       {Activation::kIdentity, Activation::kRelu, Activation::kTanh, Activation::kSigmoid}) {
    FloatBuffer z = Random(rows * cols, 4), original(z);
    AddBiasActivate(z.data(), rows, cols, bias.data(), act);
    for (int i = 0; i < rows * cols; ++i) {
      const float pre = original[i] + bias[i % cols];
      float want = pre;
      if (act == Activation::kRelu) want = pre > 0 ? pre : 0;
      if (act == Activation::kTanh) want = std::tanh(pre);
      if (act == Activation::kSigmoid) want = 1.0f / (1.0f + std::exp(-pre));
      BOOST_TEST(z[i] == want, boost::test_tools::tolerance(1e-5f));
    }
    // Backward: grad *= f'(pre) expressed through the output.
    FloatBuffer grad(rows * cols, 1.0f);
    ActivationBackward(z.data(), grad.data(), grad.size(), act);
    for (int i = 0; i < rows * cols; ++i) {
      const float pre = original[i] + bias[i % cols];
      const float h = 1e-3f;
      float fp = 1.0f;
      if (act == Activation::kRelu) fp = pre > 0 ? 1.0f : 0.0f;
      if (act == Activation::kTanh) fp = (std::tanh(pre + h) - std::tanh(pre - h)) / (2 * h);
      if (act == Activation::kSigmoid) {
        auto s = [](float v) { return 1.0f / (1.0f + std::exp(-v)); };
        fp = (s(pre + h) - s(pre - h)) / (2 * h);
      }
      BOOST_TEST(grad[i] == fp, boost::test_tools::tolerance(2e-3f));
    }
  }
}

// Each column summed down its rows in order, whatever the width (several blocks of columns, a
// ragged last one), then beta * out added: the bits of that order.
BOOST_AUTO_TEST_CASE(column_sums_add_each_column_in_row_order) {
  constexpr int kRows = 5, kCols = 600;
  const FloatBuffer m = Random(kRows * kCols, 8);
  for (const float beta : {0.0f, 0.5f}) {
    FloatBuffer sums(kCols, 3.0f);
    ColumnSums(m.data(), kRows, kCols, beta, sums.data());
    std::size_t wrong = 0;
    for (int c = 0; c < kCols; ++c) {
      float sum = m[static_cast<std::size_t>(c)];
      for (int r = 1; r < kRows; ++r) sum += m[static_cast<std::size_t>(r * kCols + c)];
      volatile float scaled = beta * 3.0f;  // kept apart from the addition: no fused multiply-add
      const float want = beta == 0.0f ? sum : scaled + sum;
      if (std::bit_cast<std::uint32_t>(sums[static_cast<std::size_t>(c)]) !=
          std::bit_cast<std::uint32_t>(want)) {
        ++wrong;
      }
    }
    BOOST_TEST(wrong == 0u, "beta " << beta);
  }
}

BOOST_AUTO_TEST_CASE(reductions_and_conversions) {
  FloatBuffer m = Random(12, 6);
  FloatBuffer sums(4, 1.0f);
  ColumnSums(m.data(), 3, 4, 2.0f, sums.data());
  for (int c = 0; c < 4; ++c) {
    BOOST_TEST(sums[c] == 2.0f + m[c] + m[4 + c] + m[8 + c], boost::test_tools::tolerance(1e-5f));
  }
  FloatBuffer y(12, 1.0f);
  Axpy(0.5f, m, y);
  Scale(2.0f, y);
  for (int i = 0; i < 12; ++i) BOOST_TEST(y[i] == 2.0f * (1.0f + 0.5f * m[i]), boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(SquaredNorm(m) == Dot(m, m), boost::test_tools::tolerance(1e-12));

  const std::uint8_t bytes[] = {0, 51, 255, 102};
  float out[4];
  BytesToFloat(bytes, 2, 2, nullptr, nullptr, 1.0f / 255.0f, out);
  BOOST_TEST(out[1] == 0.2f, boost::test_tools::tolerance(1e-6f));
  BOOST_TEST(out[2] == 1.0f);
  const float shift[] = {1.0f, 2.0f}, scale[] = {0.5f, 0.25f};
  BytesToFloat(bytes, 2, 2, shift, scale, 1.0f, out);
  BOOST_TEST(out[0] == -0.5f);
  BOOST_TEST(out[3] == 25.0f);
}

BOOST_AUTO_TEST_CASE(conversions_give_each_element_its_expression_wherever_a_batch_starts) {
  // Rows of 37 from an odd offset: vector bodies at this CPU's width and scalar tails both run,
  // and each element is its one float expression, bit for bit: (x - shift) * scale, or
  // x * uniform_scale (two and one roundings, which no build may fuse or reorder).
  const int rows = 3, cols = 37, start = 1;
  const std::size_t count = static_cast<std::size_t>(rows) * cols;
  std::mt19937 rng(9);
  std::vector<std::uint8_t> bytes(start + count);
  for (std::uint8_t& b : bytes) b = static_cast<std::uint8_t>(rng());
  const FloatBuffer floats = Random(start + count, 10), shift = Random(cols, 11),
                    scale = Random(cols, 12);
  const float uniform = 1.0f / 255.0f;
  FloatBuffer out(count);
  const auto expect = [&](const auto& in, bool per_column) {
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < count; ++i) {
      const auto x = static_cast<float>(in[start + i]);
      const std::size_t c = i % cols;
      wrong += out[i] != (per_column ? (x - shift[c]) * scale[c] : x * uniform);
    }
    return wrong;
  };
  BytesToFloat(&bytes[start], rows, cols, shift.data(), scale.data(), 1.0f, out.data());
  BOOST_TEST(expect(bytes, true) == 0u);
  BytesToFloat(&bytes[start], rows, cols, nullptr, nullptr, uniform, out.data());
  BOOST_TEST(expect(bytes, false) == 0u);
  FloatsToFloat(&floats[start], rows, cols, shift.data(), scale.data(), 1.0f, out.data());
  BOOST_TEST(expect(floats, true) == 0u);
  FloatsToFloat(&floats[start], rows, cols, nullptr, nullptr, uniform, out.data());
  BOOST_TEST(expect(floats, false) == 0u);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace gemm_test
}  // namespace dtrain::math
