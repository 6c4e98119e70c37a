// What dtrain's oneDNN wrappers (dnnl_conv.cc, dnnl_pool.cc) share: the CPU engine, each
// thread's stream and buffers, and running a primitive with the job's threads. Included only by
// those .cc files: dnnl.hpp is heavy.
//
//   Run(primitive, pd, {{DNNL_ARG_SRC, Wrap(src_desc, in)}, {DNNL_ARG_DST, Wrap(dst_desc, out)}});
//
// Every primitive is made and runs with math::BlasThreads() OpenMP threads set on the calling
// thread (its own teams only), and with a user scratchpad (scratchpad_mode::user in its
// attributes) taken from the calling thread's buffers, so concurrent calls from different threads
// share nothing.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <unordered_map>

#include "core/math/precision.h"

namespace dtrain::math::dnnl_runtime {

using dnnl::memory;
using Args = std::unordered_map<int, memory>;

const dnnl::engine& Cpu();

// This thread's own bytes for one use, kept and grown as needed.
enum Slot { kScratchpad, kLayout, kOutput, kWorkspace, kBf16Left, kBf16Right, kSlots };
void* ThreadBytes(Slot slot, std::size_t bytes);

// Attributes with a user scratchpad: every primitive here is made with them.
dnnl::primitive_attr UserScratchpad();

// `data` as a oneDNN memory of `desc` (never written through where `data` is an input).
memory Wrap(const memory::desc& desc, const float* data);

// Sets this thread's OpenMP thread count (its own teams only) to the job's BLAS threads
// (math::BlasThreads()), and returns it.
int UseJobThreads();

// Runs `p` with the job's BLAS thread count, its scratchpad in this thread's buffer.
void Run(const dnnl::primitive& p, const dnnl::primitive_desc_base& pd, Args args);

// `from` copied into `to`, another layout of the same tensor.
void Reorder(const memory& from, const memory& to);

// The padding after the input that gives `out` windows of `kernel` at stride `stride` (negative
// where the last windows leave input cells unread, as oneDNN counts it).
int PadAfter(int size, int out, int kernel, int stride, int pad_before);

// Primitives `P` made once per batch size, thread count and precision of their inputs,
// make(rows) throwing dnnl::error where oneDNN has no kernel (remembered: Get returns null). A
// primitive splits its work for the thread count it was made with and starts that many threads
// whatever the count when it runs, so it is made with the job's (UseJobThreads) and made again if
// that changes. Thread-safe.
template <typename P>
class ByRows {
 public:
  template <typename Make>
  const P* Get(int rows, Precision precision, const Make& make) const {
    const std::lock_guard lock(mutex_);
    auto [at, made] = made_.try_emplace({rows, UseJobThreads(), precision});
    if (made) {
      try {
        at->second = make(rows);
      } catch (const dnnl::error&) {
        at->second = nullptr;
      }
    }
    return at->second.get();
  }

 private:
  mutable std::mutex mutex_;
  mutable std::map<std::tuple<int, int, Precision>, std::unique_ptr<P>> made_;
};

}  // namespace dtrain::math::dnnl_runtime
