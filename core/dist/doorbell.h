// Doorbell: how one thread waits for another's progress on a latency-critical path: it spins on
// the condition for a short budget, then sleeps until rung or until its deadline. On these
// machines waking a sleeping thread costs tens of microseconds (docs/performance-notes.md), so a
// wait that is usually short should not pay it; a wait that is long should not burn a core.
//
//   // producer                              // consumer
//   posted.store(n, release);                bell.Wait([&] { return posted.load(acquire) > i; },
//   bell.Ring();                                       spin, deadline);
//
// The condition reads state the ringing thread publishes (atomics) before it calls Ring. Ring
// costs one fence and, only when the waiter sleeps, a lock and a notify. Safe for concurrent use:
// any threads may Ring; one thread at a time may Wait.
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

#include "core/dist/link.h"

namespace dtrain::dist {

// A pause instruction in a spin loop (kinder to the other hyperthread and to the memory bus).
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

class Doorbell {
 public:
  // Wakes the waiter if it sleeps. Call after publishing what its condition reads.
  void Ring();

  // True once ready() holds; false if `deadline` passes first (Deadline::max(): no deadline).
  template <typename Ready>
  bool Wait(Ready ready, std::chrono::microseconds spin, Deadline deadline);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::atomic<int> sleepers_{0};
};

template <typename Ready>
bool Doorbell::Wait(Ready ready, std::chrono::microseconds spin, Deadline deadline) {
  if (ready()) return true;
  const Deadline spin_end = std::min(Clock::now() + spin, deadline);
  while (Clock::now() < spin_end) {
    CpuRelax();
    if (ready()) return true;
  }
  // Announce the sleep before the last look; Ring fences before it reads sleepers_, so either it
  // sees this waiter or the waiter sees what was published before Ring.
  sleepers_.fetch_add(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  bool ok = true;
  {
    std::unique_lock lock(mu_);
    if (deadline == Deadline::max()) {
      cv_.wait(lock, ready);
    } else {
      ok = cv_.wait_until(lock, deadline, ready);
    }
  }
  sleepers_.fetch_sub(1, std::memory_order_relaxed);
  return ok;
}

}  // namespace dtrain::dist
