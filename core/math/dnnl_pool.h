// DnnlPool: max or average pooling of one shape through oneDNN, forward and backward, on dtrain's
// NHWC buffers: k x k windows at stride s, no padding, output side (side - k) / s + 1.
//
//   DnnlPool pool({.channels = 32, .height = 28, .width = 28, ..., .kernel = 2, .stride = 2});
//   if (pool.Available(rows)) pool.Backward(in, dout, din, rows);
//
// Max pooling's backward needs to know where each window's maximum is (oneDNN's workspace): it
// finds it again by running the forward over `in` into the calling thread's buffers, so nothing
// is kept between Forward and Backward, as in dtrain's own pooling. Primitives are made once per
// batch size; threads as DnnlConv's (dnnl_runtime.h). Safe for concurrent use on disjoint outputs.
#pragma once

#include <memory>

namespace dtrain::math {

struct PoolGeometry {
  int channels = 1, height = 1, width = 1;  // input
  int out_height = 1, out_width = 1;
  int kernel = 1, stride = 1;
  bool max = true;  // else average
};

class DnnlPool {
 public:
  explicit DnnlPool(PoolGeometry g);
  ~DnnlPool();
  DnnlPool(const DnnlPool&) = delete;
  DnnlPool& operator=(const DnnlPool&) = delete;

  // Whether oneDNN has kernels for this shape at `rows` samples on this CPU; Forward and Backward
  // may be called only where it does.
  bool Available(int rows) const;
  // out [rows x OH x OW x C]: each window's maximum or mean.
  void Forward(const float* in, float* out, int rows) const;
  // din [rows x H x W x C] (overwritten): dout spread over the windows (max: to each window's
  // first maximum; average: evenly).
  void Backward(const float* in, const float* dout, float* din, int rows) const;

 private:
  struct Primitives;
  struct Cache;
  const Primitives* For(int rows) const;  // null when oneDNN has no kernel

  PoolGeometry g_;
  std::unique_ptr<Cache> cache_;
};

}  // namespace dtrain::math
