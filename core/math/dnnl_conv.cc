#include "core/math/dnnl_conv.h"

#include "core/math/dnnl_runtime.h"

namespace dtrain::math {
namespace {

using namespace dnnl_runtime;
using Tag = memory::format_tag;

// `user` in the layout `wanted`: itself, or a copy in this thread's buffer.
memory InLayout(const memory& user, const memory::desc& wanted) {
  if (user.get_desc() == wanted) return user;
  memory copy(wanted, Cpu(), ThreadBytes(kLayout, wanted.get_size()));
  Reorder(user, copy);
  return copy;
}

}  // namespace

struct DnnlConv::Primitives {
  memory::desc src, weights, dst;  // dtrain's layouts: NHWC, HWIO, NHWC
  dnnl::convolution_forward::primitive_desc forward_pd;
  dnnl::convolution_backward_data::primitive_desc data_pd;
  dnnl::convolution_backward_weights::primitive_desc weights_pd;
  dnnl::convolution_forward forward;
  dnnl::convolution_backward_data data;
  dnnl::convolution_backward_weights weights_grad;

  Primitives(const ConvGeometry& g, int rows) {
    using dnnl::algorithm, dnnl::prop_kind;
    const auto f32 = memory::data_type::f32;
    src = {{rows, g.channels, g.height, g.width}, f32, Tag::nhwc};
    dst = {{rows, g.filters, g.out_height, g.out_width}, f32, Tag::nhwc};
    const memory::dims weight_dims{g.filters, g.channels, g.kernel, g.kernel};
    weights = {weight_dims, f32, Tag::hwio};
    const memory::desc any_weights(weight_dims, f32, Tag::any);
    const memory::dims strides{g.stride, g.stride}, pad_l{g.pad_top, g.pad_left};
    const memory::dims pad_r{PadAfter(g.height, g.out_height, g.kernel, g.stride, g.pad_top),
                             PadAfter(g.width, g.out_width, g.kernel, g.stride, g.pad_left)};
    const dnnl::primitive_attr attr = UserScratchpad();
    forward_pd = {{prop_kind::forward_training, algorithm::convolution_direct, src, any_weights,
                   dst, strides, pad_l, pad_r},
                  attr,
                  Cpu()};
    data_pd = {{algorithm::convolution_direct, src, any_weights, dst, strides, pad_l, pad_r},
               attr,
               Cpu(),
               forward_pd};
    weights_pd = {{algorithm::convolution_direct, src, any_weights, dst, strides, pad_l, pad_r},
                  attr,
                  Cpu(),
                  forward_pd};
    forward = dnnl::convolution_forward(forward_pd);
    data = dnnl::convolution_backward_data(data_pd);
    weights_grad = dnnl::convolution_backward_weights(weights_pd);
  }
};

struct DnnlConv::Cache : ByRows<Primitives> {};

DnnlConv::DnnlConv(ConvGeometry g) : g_(g), cache_(std::make_unique<Cache>()) {}

DnnlConv::~DnnlConv() = default;

const DnnlConv::Primitives* DnnlConv::For(int rows) const {
  return cache_->Get(rows, [&](int n) { return std::make_unique<Primitives>(g_, n); });
}

bool DnnlConv::Available(int rows) const { return For(rows) != nullptr; }

void DnnlConv::Forward(const float* in, const float* weights, float* out, int rows) const {
  const Primitives& p = *For(rows);
  const memory w = InLayout(Wrap(p.weights, weights), p.forward_pd.weights_desc());
  Run(p.forward, p.forward_pd,
      {{DNNL_ARG_SRC, Wrap(p.src, in)}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, Wrap(p.dst, out)}});
}

void DnnlConv::BackwardData(const float* dout, const float* weights, float* din, int rows) const {
  const Primitives& p = *For(rows);
  const memory w = InLayout(Wrap(p.weights, weights), p.data_pd.weights_desc());
  Run(p.data, p.data_pd,
      {{DNNL_ARG_DIFF_DST, Wrap(p.dst, dout)},
       {DNNL_ARG_WEIGHTS, w},
       {DNNL_ARG_DIFF_SRC, Wrap(p.src, din)}});
}

void DnnlConv::BackwardWeights(const float* in, const float* dout, float* dweights,
                               int rows) const {
  const Primitives& p = *For(rows);
  const memory user = Wrap(p.weights, dweights);
  const memory::desc wanted = p.weights_pd.diff_weights_desc();
  const bool same = wanted == p.weights;
  const memory w = same ? user : memory(wanted, Cpu(), ThreadBytes(kLayout, wanted.get_size()));
  Run(p.weights_grad, p.weights_pd,
      {{DNNL_ARG_SRC, Wrap(p.src, in)},
       {DNNL_ARG_DIFF_DST, Wrap(p.dst, dout)},
       {DNNL_ARG_DIFF_WEIGHTS, w}});
  if (!same) Reorder(w, user);
}

}  // namespace dtrain::math
