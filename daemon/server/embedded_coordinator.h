// RunJobWithWorkers: `dtrain run`'s coordinator for a job of several processes (cluster.workers
// > 1, or a mode with parameter servers). It hosts the daemon's own JobManager, Supervisor and
// worker protocol inside the calling process — each worker's coordinator connection is a socket
// pair, so nothing listens — and the job's replicas and shards run as real worker processes, as
// the caller's user, talking TCP or shared memory exactly as under dtraind; everything they
// report lands in the caller's store.
//
//   std::atomic<bool> stop{false};  // set from SIGINT: the workers checkpoint and stop
//   Result<store::JobState> end = RunJobWithWorkers(job_id, store, {.worker_exe = self, ...});
//
// The job must exist in the store, queued or recovering. Blocks until it has ended (or was
// stopped: then cancelled). One call at a time per process.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/status.h"
#include "daemon/store/store.h"

namespace dtrain::server {

struct EmbeddedOptions {
  std::string worker_exe;  // a binary with the `worker` subcommand (worker_command.h)
  const std::atomic<bool>* stop = nullptr;
  // Every line a worker prints, as it comes (also stored in the job's log).
  std::function<void(int rank, std::string_view stream, std::string_view line)> on_line;
  std::chrono::milliseconds grace{10000};  // SIGTERM to SIGKILL
};

Result<store::JobState> RunJobWithWorkers(std::int64_t job_id, store::Store& store,
                                          const EmbeddedOptions& options);

}  // namespace dtrain::server
