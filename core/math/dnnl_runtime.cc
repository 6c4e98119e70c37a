#include "core/math/dnnl_runtime.h"

#include <omp.h>

#include "core/math/buffer.h"
#include "core/math/gemm.h"

namespace dtrain::math::dnnl_runtime {
namespace {

dnnl::stream& Stream() {
  thread_local dnnl::stream stream(Cpu());
  return stream;
}

}  // namespace

const dnnl::engine& Cpu() {
  static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

void* ThreadBytes(Slot slot, std::size_t bytes) {
  thread_local ByteBuffer buffers[kSlots];
  ByteBuffer& buffer = buffers[slot];
  if (buffer.size() < bytes) buffer.resize(bytes);
  return buffer.data();
}

dnnl::primitive_attr UserScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

memory Wrap(const memory::desc& desc, const float* data) {
  return memory(desc, Cpu(), const_cast<float*>(data));
}

int UseJobThreads() {
  const int threads = BlasThreads();
  omp_set_num_threads(threads);
  return threads;
}

void Run(const dnnl::primitive& p, const dnnl::primitive_desc_base& pd, Args args) {
  const memory::desc scratchpad = pd.scratchpad_desc();
  args.insert({DNNL_ARG_SCRATCHPAD,
               memory(scratchpad, Cpu(), ThreadBytes(kScratchpad, scratchpad.get_size()))});
  UseJobThreads();
  p.execute(Stream(), args);
  Stream().wait();
}

void Reorder(const memory& from, const memory& to) {
  UseJobThreads();
  dnnl::reorder(from, to).execute(Stream(), const_cast<memory&>(from), const_cast<memory&>(to));
  Stream().wait();
}

int PadAfter(int size, int out, int kernel, int stride, int pad_before) {
  return (out - 1) * stride + kernel - size - pad_before;
}

}  // namespace dtrain::math::dnnl_runtime
