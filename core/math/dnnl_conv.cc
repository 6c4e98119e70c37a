#include "core/math/dnnl_conv.h"

#include <cstdint>

#include "core/math/bf16.h"
#include "core/math/dnnl_runtime.h"

namespace dtrain::math {
namespace {

using namespace dnnl_runtime;
using Tag = memory::format_tag;
using Type = memory::data_type;

// `data` (float, in `desc`'s layout) as the input `desc` describes: itself where that is float,
// else rounded to bf16 (math::ToBf16) into this thread's `slot`.
memory Operand(const memory::desc& desc, const float* data, Slot slot) {
  if (desc.data_type() != Type::bf16) return Wrap(desc, data);
  const auto values = static_cast<int>(desc.get_size() / sizeof(std::uint16_t));
  const int rows = static_cast<int>(desc.dims()[0]);
  auto* rounded = static_cast<std::uint16_t*>(ThreadBytes(slot, desc.get_size()));
  ToBf16Rows(data, rows, values / rows, values / rows, rounded);
  return memory(desc, Cpu(), rounded);
}

// `user` in the layout `wanted`: itself, or a copy in this thread's buffer.
memory InLayout(const memory& user, const memory::desc& wanted) {
  if (user.get_desc() == wanted) return user;
  memory copy(wanted, Cpu(), ThreadBytes(kLayout, wanted.get_size()));
  Reorder(user, copy);
  return copy;
}

}  // namespace

struct DnnlConv::Primitives {
  memory::desc src, weights, dst;           // dtrain's float layouts: NHWC, HWIO, NHWC
  memory::desc src_in, weights_in, dst_in;  // the same as products' inputs: bf16 in kBf16
  dnnl::convolution_forward::primitive_desc forward_pd;
  dnnl::convolution_backward_data::primitive_desc data_pd;
  dnnl::convolution_backward_weights::primitive_desc weights_pd;
  dnnl::convolution_forward forward;
  dnnl::convolution_backward_data data;
  dnnl::convolution_backward_weights weights_grad;

  Primitives(const ConvGeometry& g, int rows, Precision precision) {
    using dnnl::algorithm, dnnl::prop_kind;
    // Outputs are float in either precision; inputs are rounded to bf16 in kBf16.
    const Type in = precision == Precision::kBf16 ? Type::bf16 : Type::f32;
    const memory::dims src_dims{rows, g.channels, g.height, g.width};
    const memory::dims dst_dims{rows, g.filters, g.out_height, g.out_width};
    const memory::dims weight_dims{g.filters, g.channels, g.kernel, g.kernel};
    src = {src_dims, Type::f32, Tag::nhwc};
    dst = {dst_dims, Type::f32, Tag::nhwc};
    weights = {weight_dims, Type::f32, Tag::hwio};
    src_in = {src_dims, in, Tag::nhwc};
    dst_in = {dst_dims, in, Tag::nhwc};
    weights_in = {weight_dims, in, Tag::hwio};
    const memory::desc any_weights(weight_dims, in, Tag::any);
    const memory::desc any_weights_gradient(weight_dims, Type::f32, Tag::any);
    const memory::dims strides{g.stride, g.stride}, pad_l{g.pad_top, g.pad_left};
    const memory::dims pad_r{PadAfter(g.height, g.out_height, g.kernel, g.stride, g.pad_top),
                             PadAfter(g.width, g.out_width, g.kernel, g.stride, g.pad_left)};
    const dnnl::primitive_attr attr = UserScratchpad();
    forward_pd = {{prop_kind::forward_training, algorithm::convolution_direct, src_in, any_weights,
                   dst, strides, pad_l, pad_r},
                  attr,
                  Cpu()};
    data_pd = {{algorithm::convolution_direct, src, any_weights, dst_in, strides, pad_l, pad_r},
               attr,
               Cpu(),
               forward_pd};
    weights_pd = {{algorithm::convolution_direct, src_in, any_weights_gradient, dst_in, strides,
                   pad_l, pad_r},
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

const DnnlConv::Primitives* DnnlConv::For(int rows, Precision precision) const {
  return cache_->Get(rows, precision,
                     [&](int n) { return std::make_unique<Primitives>(g_, n, precision); });
}

bool DnnlConv::Available(int rows, Precision precision) const {
  return For(rows, precision) != nullptr;
}

void DnnlConv::Forward(const float* in, const float* weights, float* out, int rows,
                       Precision precision) const {
  const Primitives& p = *For(rows, precision);
  const memory w =
      InLayout(Operand(p.weights_in, weights, kBf16Right), p.forward_pd.weights_desc());
  Run(p.forward, p.forward_pd,
      {{DNNL_ARG_SRC, Operand(p.src_in, in, kBf16Left)},
       {DNNL_ARG_WEIGHTS, w},
       {DNNL_ARG_DST, Wrap(p.dst, out)}});
}

void DnnlConv::BackwardData(const float* dout, const float* weights, float* din, int rows,
                            Precision precision) const {
  const Primitives& p = *For(rows, precision);
  const memory w = InLayout(Operand(p.weights_in, weights, kBf16Right), p.data_pd.weights_desc());
  Run(p.data, p.data_pd,
      {{DNNL_ARG_DIFF_DST, Operand(p.dst_in, dout, kBf16Left)},
       {DNNL_ARG_WEIGHTS, w},
       {DNNL_ARG_DIFF_SRC, Wrap(p.src, din)}});
}

void DnnlConv::BackwardWeights(const float* in, const float* dout, float* dweights, int rows,
                               Precision precision) const {
  const Primitives& p = *For(rows, precision);
  const memory user = Wrap(p.weights, dweights);
  const memory::desc wanted = p.weights_pd.diff_weights_desc();
  const bool same = wanted == p.weights;
  const memory w = same ? user : memory(wanted, Cpu(), ThreadBytes(kLayout, wanted.get_size()));
  Run(p.weights_grad, p.weights_pd,
      {{DNNL_ARG_SRC, Operand(p.src_in, in, kBf16Left)},
       {DNNL_ARG_DIFF_DST, Operand(p.dst_in, dout, kBf16Right)},
       {DNNL_ARG_DIFF_WEIGHTS, w}});
  if (!same) Reorder(w, user);
}

}  // namespace dtrain::math
