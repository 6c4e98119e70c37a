#include "core/math/compute_signals.h"

#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <mutex>
#include <thread>

namespace dtrain::math {

void CatchSignalsOffComputeThreads(std::initializer_list<int> signals, SignalHandler handler) {
  sigset_t caught;
  sigemptyset(&caught);
  struct sigaction action {};
  action.sa_handler = handler;
  sigemptyset(&action.sa_mask);
  for (const int signal : signals) {
    sigaddset(&caught, signal);
    ::sigaction(signal, &action, nullptr);
  }
  pthread_sigmask(SIG_BLOCK, &caught, nullptr);
  static std::once_flag started;
  std::call_once(started, [] {
    std::thread([] {
      sigset_t none;
      sigemptyset(&none);
      pthread_sigmask(SIG_SETMASK, &none, nullptr);  // takes whatever the others block
      for (;;) ::pause();
    }).detach();
  });
}

}  // namespace dtrain::math
