#include "core/math/thread_team.h"

#include <algorithm>
#include <cassert>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace dtrain::math {
namespace {

// How long a waiting thread spins before it sleeps: long enough to span the gap between two
// passes of a step, and between steps (the optimizer, the next batch's gather), so that a pass
// starts without a futex wake-up (tens of microseconds on a virtual machine); short enough that
// an idle team gives its cores back at once.
constexpr auto kSpin = std::chrono::microseconds(1000);

void Relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

// Spins until value != old or kSpin has passed, then sleeps until it changes; returns the value.
template <typename T>
T AwaitChange(const std::atomic<T>& value, T old) {
  const auto until = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    const T now = value.load(std::memory_order_acquire);
    if (now != old) return now;
    if (i % 64 == 63 && std::chrono::steady_clock::now() > until) break;
    Relax();
  }
  value.wait(old, std::memory_order_acquire);
  return value.load(std::memory_order_acquire);
}

}  // namespace

ThreadTeam::ThreadTeam(int size) {
  assert(size >= 1);
  threads_.reserve(static_cast<std::size_t>(std::max(0, size - 1)));
  for (int i = 1; i < size; ++i) threads_.emplace_back([this, i] { Serve(i); });
}

ThreadTeam::~ThreadTeam() {
  stopping_.store(true, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void ThreadTeam::Serve(int index) {
  unsigned seen = 0;
  for (;;) {
    seen = AwaitChange(generation_, seen);
    if (stopping_.load(std::memory_order_relaxed)) return;
    (*task_)(index);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

void ThreadTeam::Run(const std::function<void(int)>& part) {
  if (threads_.empty()) {
    part(0);
    return;
  }
  task_ = &part;
  pending_.store(static_cast<int>(threads_.size()), std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  part(0);
  for (int left = pending_.load(std::memory_order_acquire); left != 0;) {
    left = AwaitChange(pending_, left);
  }
}

}  // namespace dtrain::math
