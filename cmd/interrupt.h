// Ctrl-C (SIGINT) and SIGTERM as a request to stop, for the commands that wait: `run` stops
// training after a checkpoint; `submit`, `wait` and `logs -f` stop waiting (the job keeps
// running in its daemon). Every such command then exits with kExitInterrupted.
//
//   InstallStopHandlers();
//   while (!StopRequested()) { ... wait a slice ... }
//
// The flag is a lock-free atomic set from the signal handler: safe for concurrent use.
#pragma once

#include <atomic>

namespace dtrain::cli {

// Where the handler runs. kAnyThread: a blocking system call of the waiting thread then fails
// with EINTR instead of restarting. kOffComputeThreads: for a command that trains in this
// process; no thread it starts afterwards takes the signals (math/compute_signals.h).
enum class StopSignalsOn { kAnyThread, kOffComputeThreads };

// Replaces the default action of SIGINT and SIGTERM (terminating the process) with setting
// the stop flag.
void InstallStopHandlers(StopSignalsOn on = StopSignalsOn::kAnyThread);
bool StopRequested();
// The flag itself, for code that polls it (runner::RunOptions::stop).
const std::atomic<bool>* StopFlag();

}  // namespace dtrain::cli
