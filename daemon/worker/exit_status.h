// The exit statuses of the processes a daemon starts for a job: the worker (worker_main.h), a
// peer's stand-in (remote_worker.h) and a Slurm task's stand-in (slurm_task.h). A stand-in ends
// the way its worker ended, so all three use the same numbers; the runner reads them back.
#pragma once

#include <string>

namespace dtrain::worker {

inline constexpr int kExitCompleted = 0;  // training completed or reached its target
inline constexpr int kExitFailed = 1;     // any failure, its reason printed on stderr
inline constexpr int kExitStopped = 130;  // stopped by a signal, after a checkpoint

// Prints `message` on stderr, a line, and returns kExitFailed.
int ExitFailed(const std::string& message);

}  // namespace dtrain::worker
