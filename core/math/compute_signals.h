// Keeps caught signals off the threads that compute. oneDNN's JIT sgemm kernels (Debian 12's
// libdnnl 2.6) keep live data below the stack pointer, past the 128-byte red zone; a signal
// handler's frame, pushed onto that stack when the signal interrupts the kernel, overwrites it and
// the kernel goes on to corrupt the heap (an interrupted `dtrain run` died in free() about one
// time in four). A process that catches signals while it computes installs its handlers here:
//
//   CatchSignalsOffComputeThreads({SIGINT, SIGTERM}, OnStop);  // before starting any thread
//
// Invariants: the calling thread, and every thread it starts afterwards (a ThreadTeam's, OpenMP's
// pool), blocks the signals; a thread of this module's, waiting in pause(), takes them, so the
// handler still runs as soon as one comes. Threads that existed already (OpenBLAS's pool, started
// when the library loads) may take them too: their kernels keep to the ABI's stack. A thread
// waiting in a system call is therefore not woken by these signals: handlers set a flag that the
// computing threads poll.
#pragma once

#include <initializer_list>

namespace dtrain::math {

using SignalHandler = void (*)(int);

// Installs `handler` for each of `signals` as above. Callable again (a sweep runs its trials one
// after another in one process): one waiting thread serves every call.
void CatchSignalsOffComputeThreads(std::initializer_list<int> signals, SignalHandler handler);

}  // namespace dtrain::math
