#include "core/math/dnnl_pool.h"

#include "core/math/dnnl_runtime.h"

namespace dtrain::math {

using namespace dnnl_runtime;

struct DnnlPool::Primitives {
  memory::desc src, dst;  // NHWC
  dnnl::pooling_forward::primitive_desc inference_pd, training_pd;
  dnnl::pooling_backward::primitive_desc backward_pd;
  dnnl::pooling_forward inference, training;
  dnnl::pooling_backward backward;

  Primitives(const PoolGeometry& g, int rows) {
    using dnnl::algorithm, dnnl::prop_kind;
    const auto f32 = memory::data_type::f32;
    src = {{rows, g.channels, g.height, g.width}, f32, memory::format_tag::nhwc};
    dst = {{rows, g.channels, g.out_height, g.out_width}, f32, memory::format_tag::nhwc};
    const algorithm kind = g.max ? algorithm::pooling_max : algorithm::pooling_avg_include_padding;
    const memory::dims strides{g.stride, g.stride}, kernel{g.kernel, g.kernel}, pad_l{0, 0};
    const memory::dims pad_r{PadAfter(g.height, g.out_height, g.kernel, g.stride, 0),
                             PadAfter(g.width, g.out_width, g.kernel, g.stride, 0)};
    const dnnl::primitive_attr attr = UserScratchpad();
    inference_pd = {
        {prop_kind::forward_inference, kind, src, dst, strides, kernel, pad_l, pad_r}, attr, Cpu()};
    training_pd = {
        {prop_kind::forward_training, kind, src, dst, strides, kernel, pad_l, pad_r}, attr, Cpu()};
    backward_pd = {{kind, src, dst, strides, kernel, pad_l, pad_r}, attr, Cpu(), training_pd};
    inference = dnnl::pooling_forward(inference_pd);
    training = dnnl::pooling_forward(training_pd);
    backward = dnnl::pooling_backward(backward_pd);
  }
};

struct DnnlPool::Cache : ByRows<Primitives> {};

DnnlPool::DnnlPool(PoolGeometry g) : g_(g), cache_(std::make_unique<Cache>()) {}

DnnlPool::~DnnlPool() = default;

const DnnlPool::Primitives* DnnlPool::For(int rows) const {
  // Pooling compares and averages floats whatever the products' precision.
  return cache_->Get(rows, Precision::kFp32,
                     [&](int n) { return std::make_unique<Primitives>(g_, n); });
}

bool DnnlPool::Available(int rows) const { return For(rows) != nullptr; }

void DnnlPool::Forward(const float* in, float* out, int rows) const {
  const Primitives& p = *For(rows);
  Run(p.inference, p.inference_pd,
      {{DNNL_ARG_SRC, Wrap(p.src, in)}, {DNNL_ARG_DST, Wrap(p.dst, out)}});
}

void DnnlPool::Backward(const float* in, const float* dout, float* din, int rows) const {
  const Primitives& p = *For(rows);
  Args args{{DNNL_ARG_DIFF_DST, Wrap(p.dst, dout)}, {DNNL_ARG_DIFF_SRC, Wrap(p.src, din)}};
  if (g_.max) {
    const memory::desc ws = p.training_pd.workspace_desc();
    const memory workspace(ws, Cpu(), ThreadBytes(kWorkspace, ws.get_size()));
    const memory out(p.dst, Cpu(), ThreadBytes(kOutput, p.dst.get_size()));
    Run(p.training, p.training_pd,
        {{DNNL_ARG_SRC, Wrap(p.src, in)}, {DNNL_ARG_DST, out}, {DNNL_ARG_WORKSPACE, workspace}});
    args.insert({DNNL_ARG_WORKSPACE, workspace});
  }
  Run(p.backward, p.backward_pd, std::move(args));
}

}  // namespace dtrain::math
