// DnnlConv: one convolution shape's three products through oneDNN, on dtrain's own buffers —
// activations NHWC (each sample [H x W x C], channels contiguous), weights HWIO (W [k*k*C x F]
// row-major). Bias and activation stay on the caller's side.
//
//   DnnlConv conv({.channels = 1, .height = 28, ..., .pad_top = 2, .pad_left = 2});
//   if (conv.Available(rows, kFp32)) conv.Forward(in, weights, out, rows, kFp32);  // in (*) W
//
// Where oneDNN wants its own (blocked) weight layout it gets a reordered copy each call; float
// activations are never copied. A product asked for in bf16 (precision.h) has its inputs rounded
// to bf16 (math::ToBf16) into per-thread buffers and its output float. Primitives are made once
// per batch size and precision and kept. Every method
// runs with math::BlasThreads() OpenMP threads (the job's BLAS threads), set on the calling
// thread. Safe for concurrent use on disjoint outputs. oneDNN picks its kernels for this CPU at
// run time (AVX2, AVX-512, AMX; DNNL_MAX_CPU_ISA caps them), so the build is the same everywhere.
// dnnl.hpp stays inside dnnl_conv.cc: it is heavy.
#pragma once

#include <memory>

#include "core/math/precision.h"

namespace dtrain::math {

struct ConvGeometry {
  int channels = 1, height = 1, width = 1;         // input
  int filters = 1, out_height = 1, out_width = 1;  // output
  int kernel = 1, stride = 1, pad_top = 0, pad_left = 0;
};

class DnnlConv {
 public:
  explicit DnnlConv(ConvGeometry g);
  ~DnnlConv();
  DnnlConv(const DnnlConv&) = delete;
  DnnlConv& operator=(const DnnlConv&) = delete;

  // Each product takes its inputs in `precision`: float, or rounded to bf16 (only where
  // NativeBf16()); its output is float either way.

  // Whether oneDNN has kernels for all three products of this shape at `rows` samples, inputs in
  // `precision`, on this CPU; the products below may be called only where it does.
  bool Available(int rows, Precision precision) const;
  // out [rows x OH x OW x F] = the convolution of in [rows x H x W x C] with weights.
  void Forward(const float* in, const float* weights, float* out, int rows,
               Precision precision) const;
  // din [rows x H x W x C] (overwritten) = the gradient of the input, given dout.
  void BackwardData(const float* dout, const float* weights, float* din, int rows,
                    Precision precision) const;
  // dweights [k*k*C x F] (overwritten) = the gradient of the weights over the rows.
  void BackwardWeights(const float* in, const float* dout, float* dweights, int rows,
                       Precision precision) const;

 private:
  struct Primitives;
  struct Cache;
  const Primitives* For(int rows, Precision precision) const;  // null when oneDNN has no kernel

  ConvGeometry g_;
  std::unique_ptr<Cache> cache_;
};

}  // namespace dtrain::math
