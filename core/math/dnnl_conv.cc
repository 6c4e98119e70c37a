#include "core/math/dnnl_conv.h"

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

#include "core/math/buffer.h"
#include "core/math/gemm.h"

namespace dtrain::math {
namespace {

using dnnl::memory;
using Tag = memory::format_tag;
using Args = std::unordered_map<int, memory>;

const dnnl::engine& Cpu() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

dnnl::stream& Stream() {
  thread_local dnnl::stream stream(Cpu());
  return stream;
}

// This thread's own bytes, kept and grown as needed: a primitive's scratchpad, and the weights
// in the layout a primitive wants.
enum Slot { kScratchpad, kWeights, kSlots };
void* ThreadBytes(Slot slot, std::size_t bytes) {
  thread_local ByteBuffer buffers[kSlots];
  ByteBuffer& buffer = buffers[slot];
  if (buffer.size() < bytes) buffer.resize(bytes);
  return buffer.data();
}

memory Wrap(const memory::desc& desc, const float* data) {
  return memory(desc, Cpu(), const_cast<float*>(data));
}

// Runs `p` with the job's BLAS thread count, its scratchpad in this thread's buffer.
void Run(const dnnl::primitive& p, const dnnl::primitive_desc_base& pd, Args args) {
  const memory::desc scratchpad = pd.scratchpad_desc();
  args.insert({DNNL_ARG_SCRATCHPAD,
               memory(scratchpad, Cpu(), ThreadBytes(kScratchpad, scratchpad.get_size()))});
  omp_set_num_threads(BlasThreads());  // this thread's OpenMP teams only
  p.execute(Stream(), args);
  Stream().wait();
}

// `from` copied into `to` (another layout of the same tensor).
void Reorder(const memory& from, const memory& to) {
  omp_set_num_threads(BlasThreads());
  dnnl::reorder(from, to).execute(Stream(), const_cast<memory&>(from), const_cast<memory&>(to));
  Stream().wait();
}

// `user` in the layout `wanted`: itself, or a copy in this thread's weights buffer.
memory InLayout(const memory& user, const memory::desc& wanted) {
  if (user.get_desc() == wanted) return user;
  memory copy(wanted, Cpu(), ThreadBytes(kWeights, wanted.get_size()));
  Reorder(user, copy);
  return copy;
}

// The padding after the input that gives `out` positions of stride `stride` (negative where the
// last positions leave input cells unread, as oneDNN counts it).
int PadAfter(int size, int out, int kernel, int stride, int pad_before) {
  return (out - 1) * stride + kernel - size - pad_before;
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
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
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

DnnlConv::DnnlConv(ConvGeometry g) : g_(g) {}

DnnlConv::~DnnlConv() = default;

const DnnlConv::Primitives* DnnlConv::For(int rows) const {
  const std::lock_guard lock(mutex_);
  auto [at, made] = by_rows_.try_emplace(rows);
  if (made) {
    try {
      at->second = std::make_unique<Primitives>(g_, rows);
    } catch (const dnnl::error&) {
      at->second = nullptr;  // no kernel for this shape: remembered as such
    }
  }
  return at->second.get();
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
  const memory w = same ? user : memory(wanted, Cpu(), ThreadBytes(kWeights, wanted.get_size()));
  Run(p.weights_grad, p.weights_pd,
      {{DNNL_ARG_SRC, Wrap(p.src, in)},
       {DNNL_ARG_DIFF_DST, Wrap(p.dst, dout)},
       {DNNL_ARG_DIFF_WEIGHTS, w}});
  if (!same) Reorder(w, user);
}

}  // namespace dtrain::math
