#include "cmd/interrupt.h"

#include <signal.h>

#include "core/math/compute_signals.h"

namespace dtrain::cli {
namespace {

std::atomic<bool> g_stop{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");

extern "C" void OnStopSignal(int) { g_stop.store(true); }

}  // namespace

void InstallStopHandlers(StopSignalsOn on) {
  if (on == StopSignalsOn::kOffComputeThreads) {
    math::CatchSignalsOffComputeThreads({SIGINT, SIGTERM}, OnStopSignal);
    return;
  }
  struct sigaction action {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

bool StopRequested() { return g_stop.load(); }

const std::atomic<bool>* StopFlag() { return &g_stop; }

}  // namespace dtrain::cli
