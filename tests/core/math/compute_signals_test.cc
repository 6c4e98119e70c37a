// Caught signals stay off the threads that compute: oneDNN's sgemm, run by the caller and by a
// thread team while the process is sent signals, keeps its results and the heap whole (without
// the routing it corrupted the heap within milliseconds), and no handler runs on those threads;
// installing again starts no thread.
#include "core/math/compute_signals.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <filesystem>
#include <thread>
#include <vector>

#include "core/math/dnnl_gemm.h"
#include "core/math/thread_team.h"

namespace dtrain::math {
namespace compute_signals_test {

std::atomic<long> g_taken{0};
std::atomic<bool> g_taken_while_computing{false};
thread_local bool t_computes = false;

extern "C" void CountSignal(int) {
  g_taken.fetch_add(1);
  if (t_computes) g_taken_while_computing.store(true);
}

// All-ones A [m x k] times all-halves B [k x n]: every entry of C is exactly k / 2.
bool ProductHolds(int m, int n, int k) {
  const std::vector<float> a(static_cast<std::size_t>(m) * k, 1.0f);
  const std::vector<float> b(static_cast<std::size_t>(k) * n, 0.5f);
  std::vector<float> c(static_cast<std::size_t>(m) * n, -1.0f);
  if (!OnednnGemm(Trans::kNo, Trans::kNo, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(),
                  n)) {
    return false;
  }
  for (const float v : c) {
    if (v != 0.5f * static_cast<float>(k)) return false;
  }
  return true;
}

BOOST_AUTO_TEST_SUITE(compute_signals)

BOOST_AUTO_TEST_CASE(handlers_run_off_the_computing_threads_and_kernels_stay_whole) {
  CatchSignalsOffComputeThreads({SIGUSR2}, CountSignal);
  ThreadTeam team(2);  // started after: it inherits the blocked signals
  std::atomic<bool> computing{true};
  std::thread sender([&] {  // at least one signal, however late this thread starts
    do {
      ::kill(::getpid(), SIGUSR2);
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    } while (computing.load());
  });
  std::atomic<int> wrong{0};
  for (int round = 0; round < 400; ++round) {
    team.Run([&](int part) {
      t_computes = true;
      if (!ProductHolds(64 + part, 256, 128) || !ProductHolds(256, 128, 64)) wrong.fetch_add(1);
    });
  }
  computing.store(false);
  sender.join();
  // The handler runs on the module's thread; a loaded machine may take a while to schedule it.
  for (int i = 0; i < 3000 && g_taken.load() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  BOOST_TEST(wrong.load() == 0);
  BOOST_TEST(g_taken.load() > 0);
  BOOST_TEST(!g_taken_while_computing.load());
}

std::size_t ThreadsOfThisProcess() {
  std::size_t n = 0;
  for ([[maybe_unused]] const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    ++n;
  }
  return n;
}

// A sweep runs its trials one after another in one process, each installing its handlers: one
// waiting thread serves them all.
BOOST_AUTO_TEST_CASE(installing_again_starts_no_other_thread) {
  CatchSignalsOffComputeThreads({SIGUSR2}, CountSignal);
  const std::size_t threads = ThreadsOfThisProcess();
  CatchSignalsOffComputeThreads({SIGUSR2}, CountSignal);
  BOOST_TEST(ThreadsOfThisProcess() == threads);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace compute_signals_test
}  // namespace dtrain::math
