// Elementwise and reduction kernels over flat float memory (Eigen maps; no allocation).
//
//   AddBiasActivate(z, rows, cols, bias, Activation::kRelu);  // z = relu(z + bias) row-wise
//   ActivationBackward(a, grad, n, Activation::kRelu);       // grad *= relu'(.) given output a
//
// Matrices are row-major [rows x cols]. Pointers may alias only where a comment says so.
// Pure functions of their arguments: safe for concurrent use on disjoint memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace dtrain::math {

enum class Activation { kIdentity, kRelu, kTanh, kSigmoid };

// z[r, :] = act(z[r, :] + bias) for every row r.
void AddBiasActivate(float* z, int rows, int cols, const float* bias, Activation act);

// out[i] = act(in[i]); in and out may be the same memory.
void Activate(const float* in, float* out, std::size_t n, Activation act);

// grad[i] *= act'(x_i), where out[i] = act(x_i) is the activation's output (in place on grad).
void ActivationBackward(const float* out, float* grad, std::size_t n, Activation act);

// out[c] = beta * out[c] + sum_r m[r, c], each column summed in row order (0.0f where rows == 0);
// a column's bits do not depend on the other columns.
void ColumnSums(const float* m, int rows, int cols, float beta, float* out);

// y += alpha * x
void Axpy(float alpha, std::span<const float> x, std::span<float> y);
// x *= alpha
void Scale(float alpha, std::span<float> x);
// out = alpha * x (same sizes); a plain copy when alpha == 1
void ScaleInto(float alpha, std::span<const float> x, std::span<float> out);
// sum_i x_i * y_i: float partial sums over blocks of 1024, accumulated in double.
double Dot(std::span<const float> x, std::span<const float> y);
// sum_i x_i^2: float partial sums over blocks of 1024, accumulated in double.
double SquaredNorm(std::span<const float> x);

// out[i] = (in[i] - shift[i % cols]) * scale[i % cols] for a row-major [rows x cols] block;
// with shift == nullptr and scale == nullptr, out[i] = in[i] * uniform_scale.
void BytesToFloat(const std::uint8_t* in, int rows, int cols, const float* shift,
                  const float* scale, float uniform_scale, float* out);
void FloatsToFloat(const float* in, int rows, int cols, const float* shift, const float* scale,
                   float uniform_scale, float* out);
// The same from float32 or float64 values stored at any alignment (a memory-mapped NumPy file):
// float64 values are rounded to float first, then shifted and scaled as above.
void UnalignedFloatsToFloat(const std::uint8_t* in, int rows, int cols, const float* shift,
                            const float* scale, float uniform_scale, float* out);
void UnalignedDoublesToFloat(const std::uint8_t* in, int rows, int cols, const float* shift,
                             const float* scale, float uniform_scale, float* out);

}  // namespace dtrain::math
