#include "core/math/elementwise.h"

#include <Eigen/Core>
#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>

#include "core/math/vector_width.h"

namespace dtrain::math {
namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using MatrixMap = Eigen::Map<RowMatrix>;
using ConstMatrixMap = Eigen::Map<const RowMatrix>;
using ArrayMap = Eigen::Map<Eigen::ArrayXf>;
using ConstArrayMap = Eigen::Map<const Eigen::ArrayXf>;
using ConstRowVectorMap = Eigen::Map<const Eigen::RowVectorXf>;

Eigen::Index Size(std::span<const float> s) { return static_cast<Eigen::Index>(s.size()); }

// (in - shift) * scale per column, or in * uniform_scale, in float. A plain loop rather than Eigen,
// whose vector width is fixed by the file's flags: inlined into the builds below, it runs at each
// one's width, and each element gets the same two operations in all of them.
template <typename In>
[[gnu::always_inline]] inline void Convert(const In* in, int rows, int cols, const float* shift,
                                           const float* scale, float uniform_scale, float* out) {
  const auto width = static_cast<std::size_t>(cols);
  if (shift == nullptr && scale == nullptr) {
    const std::size_t count = static_cast<std::size_t>(rows) * width;
    for (std::size_t i = 0; i < count; ++i) out[i] = static_cast<float>(in[i]) * uniform_scale;
    return;
  }
  for (std::size_t row = 0; row < static_cast<std::size_t>(rows); ++row) {
    const In* from = in + row * width;
    float* to = out + row * width;
    for (std::size_t col = 0; col < width; ++col) {
      to[col] = (static_cast<float>(from[col]) - shift[col]) * scale[col];
    }
  }
}

// A T stored at any alignment; Convert reads it through its conversion to float.
template <typename T>
struct Unaligned {
  unsigned char bytes[sizeof(T)];
  explicit operator float() const {
    T value;
    std::memcpy(&value, bytes, sizeof(T));
    return static_cast<float>(value);
  }
};
static_assert(sizeof(Unaligned<double>) == 8 && alignof(Unaligned<double>) == 1);

}  // namespace

void AddBiasActivate(float* z, int rows, int cols, const float* bias, Activation act) {
  MatrixMap m(z, rows, cols);
  ConstRowVectorMap b(bias, cols);
  switch (act) {
    case Activation::kIdentity:
      m.rowwise() += b;
      break;
    case Activation::kRelu:
      m = (m.rowwise() + b).cwiseMax(0.0f);
      break;
    case Activation::kTanh:
      m = (m.rowwise() + b).array().tanh().matrix();
      break;
    case Activation::kSigmoid:
      m = ((-(m.rowwise() + b).array()).exp() + 1.0f).inverse().matrix();
      break;
  }
}

void Activate(const float* in, float* out, std::size_t n, Activation act) {
  // Plain loops: GCC 12 vectorises them, and Eigen's 1-D maps here trip -Wmaybe-uninitialized.
  switch (act) {
    case Activation::kIdentity:
      if (in != out) std::copy(in, in + n, out);
      break;
    case Activation::kRelu:
      for (std::size_t i = 0; i < n; ++i) out[i] = std::max(in[i], 0.0f);
      break;
    case Activation::kTanh:
      for (std::size_t i = 0; i < n; ++i) out[i] = std::tanh(in[i]);
      break;
    case Activation::kSigmoid:
      for (std::size_t i = 0; i < n; ++i) out[i] = 1.0f / (1.0f + std::exp(-in[i]));
      break;
  }
}

void ActivationBackward(const float* out, float* grad, std::size_t n, Activation act) {
  const auto count = static_cast<Eigen::Index>(n);
  ConstArrayMap a(out, count);
  ArrayMap g(grad, count);
  switch (act) {
    case Activation::kIdentity:
      break;
    case Activation::kRelu:
      g = (a > 0.0f).select(g, 0.0f);
      break;
    case Activation::kTanh:
      g *= 1.0f - a.square();
      break;
    case Activation::kSigmoid:
      g *= a * (1.0f - a);
      break;
  }
}

// Each column summed down its rows in order, kColumnBlock columns at a time in registers and L1,
// at the CPU's vector width: a column's sum does not depend on which columns it is summed with.
constexpr int kColumnBlock = 256;

DTRAIN_AT_VECTOR_WIDTH
void ColumnSums(const float* m, int rows, int cols, float beta, float* out) {
  float sums[kColumnBlock];
  for (int c0 = 0; c0 < cols; c0 += kColumnBlock) {
    const int width = std::min(kColumnBlock, cols - c0);
    for (int c = 0; c < width; ++c) sums[c] = rows > 0 ? m[c0 + c] : 0.0f;
    for (int r = 1; r < rows; ++r) {
      const float* row = m + static_cast<std::size_t>(r) * static_cast<std::size_t>(cols) + c0;
      for (int c = 0; c < width; ++c) sums[c] += row[c];
    }
    float* to = out + c0;
    if (beta == 0.0f) {
      for (int c = 0; c < width; ++c) to[c] = sums[c];
    } else {
      for (int c = 0; c < width; ++c) to[c] = beta * to[c] + sums[c];
    }
  }
}

void Axpy(float alpha, std::span<const float> x, std::span<float> y) {
  Eigen::Map<Eigen::VectorXf>(y.data(), Size(y)) +=
      alpha * Eigen::Map<const Eigen::VectorXf>(x.data(), Size(x));
}

void Scale(float alpha, std::span<float> x) {
  Eigen::Map<Eigen::VectorXf>(x.data(), Size(x)) *= alpha;
}

void ScaleInto(float alpha, std::span<const float> x, std::span<float> out) {
  assert(x.size() == out.size());
  if (alpha == 1.0f) {
    std::copy(x.begin(), x.end(), out.begin());
    return;
  }
  Eigen::Map<Eigen::VectorXf>(out.data(), Size(out)) =
      alpha * Eigen::Map<const Eigen::VectorXf>(x.data(), Size(x));
}

// Reductions: float partial sums over short blocks (vectorised by Eigen), accumulated in double,
// so the result stays accurate for millions of elements without a scalar double loop.
constexpr std::size_t kReductionBlock = 1024;

double Dot(std::span<const float> x, std::span<const float> y) {
  double sum = 0.0;
  for (std::size_t i = 0; i < x.size(); i += kReductionBlock) {
    const auto n = static_cast<Eigen::Index>(std::min(kReductionBlock, x.size() - i));
    sum += Eigen::Map<const Eigen::VectorXf>(x.data() + i, n)
               .dot(Eigen::Map<const Eigen::VectorXf>(y.data() + i, n));
  }
  return sum;
}

double SquaredNorm(std::span<const float> x) {
  double sum = 0.0;
  for (std::size_t i = 0; i < x.size(); i += kReductionBlock) {
    const auto n = static_cast<Eigen::Index>(std::min(kReductionBlock, x.size() - i));
    sum += Eigen::Map<const Eigen::VectorXf>(x.data() + i, n).squaredNorm();
  }
  return sum;
}

// The conversions run at the CPU's vector width (vector_width.h); this file is compiled without
// fused multiply-adds (core/CMakeLists.txt), so every build gives the same bits.

DTRAIN_AT_VECTOR_WIDTH
void BytesToFloat(const std::uint8_t* in, int rows, int cols, const float* shift,
                  const float* scale, float uniform_scale, float* out) {
  Convert(in, rows, cols, shift, scale, uniform_scale, out);
}

DTRAIN_AT_VECTOR_WIDTH
void FloatsToFloat(const float* in, int rows, int cols, const float* shift, const float* scale,
                   float uniform_scale, float* out) {
  Convert(in, rows, cols, shift, scale, uniform_scale, out);
}

DTRAIN_AT_VECTOR_WIDTH
void UnalignedFloatsToFloat(const std::uint8_t* in, int rows, int cols, const float* shift,
                            const float* scale, float uniform_scale, float* out) {
  Convert(reinterpret_cast<const Unaligned<float>*>(in), rows, cols, shift, scale, uniform_scale,
          out);
}

DTRAIN_AT_VECTOR_WIDTH
void UnalignedDoublesToFloat(const std::uint8_t* in, int rows, int cols, const float* shift,
                             const float* scale, float uniform_scale, float* out) {
  Convert(reinterpret_cast<const Unaligned<double>*>(in), rows, cols, shift, scale, uniform_scale,
          out);
}

}  // namespace dtrain::math
