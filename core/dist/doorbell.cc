#include "core/dist/doorbell.h"

namespace dtrain::dist {

void Doorbell::Ring() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (sleepers_.load(std::memory_order_relaxed) == 0) return;
  // Taking the lock orders this notify after the waiter's last look at its condition.
  std::lock_guard lock(mu_);
  cv_.notify_all();
}

}  // namespace dtrain::dist
