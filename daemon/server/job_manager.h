// JobManager: the daemon's scheduler and the coordinator of every job it accepted — the queue
// (priority, then submission order), the host limits (max_jobs, cores), starting each job's
// worker process, admitting it when it connects, recording what it sends, and deciding what
// happens when it exits: success, cancellation, a restart from the newest checkpoint (up to
// max_restarts), failure, or — when the daemon stops — recovery at the next start.
//
//   JobManager jobs(io, pool, store, supervisor, settings);
//   co_await jobs.Reconcile();                       // before serving: resume what was running
//   Submitted s = co_await jobs.Submit(text, "job.toml", uid, {}, {});
//
// Lives on the io_context's thread: every method must be called there (coroutines resume there
// too). Store calls that wait run on the blocking pool. Thread-compatible, not thread-safe.
#pragma once

#include <sys/types.h>

#include <asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "config/job.h"
#include "core/train/metrics.h"
#include "daemon/server/supervisor.h"
#include "daemon/store/store.h"

namespace asio {
class io_context;
class thread_pool;
}  // namespace asio

namespace dtrain::server {

struct ManagerSettings {
  int max_jobs = 2;
  int cores = 1;  // resolved: > 0
  std::chrono::milliseconds grace{10000};
  int max_restarts = 3;      // for jobs whose file does not say
  std::string socket_path;   // workers connect here
  std::string worker_exe;    // dtraind, started as `dtraind worker ...`
};

// A refusal, with the control protocol's error code ("not_found", "denied", "conflict", ...).
struct Refusal {
  std::string code;
  std::string message;
  std::vector<config::Diagnostic> diagnostics;
};

struct Submitted {
  std::int64_t id = 0;
  std::optional<Refusal> refusal;
};

// What a connecting worker gets: the job and, to resume from, a checkpoint blob.
struct Admission {
  std::string spec_toml;
  std::int64_t resume_step = -1;
  std::string checkpoint_blob;
};

// In-memory facts about an active job that the store does not hold.
struct LiveJob {
  std::string pending_reason;  // why a queued job waits
  int restarts = 0;
};

class JobManager {
 public:
  JobManager(asio::io_context& io, asio::thread_pool& pool, store::Store& store,
             Supervisor& supervisor, ManagerSettings settings);
  ~JobManager();

  // Re-queues what the store says was queued, starting, running or recovering (its processes
  // died with the previous daemon) and starts what fits.
  asio::awaitable<Status> Reconcile();

  asio::awaitable<Submitted> Submit(const std::string& job_toml, const std::string& source,
                                    uid_t owner, std::optional<std::string> name,
                                    std::optional<int> priority);
  // Returns once the job has ended (queued jobs at once; running ones once their worker exited).
  asio::awaitable<std::optional<Refusal>> Cancel(std::int64_t id, uid_t caller);

  asio::awaitable<Result<Admission>> AdmitWorker(std::int64_t job, int rank,
                                                 const std::string& token);
  void WorkerMetrics(std::int64_t job, int rank, std::span<const train::MetricPoint> points);
  asio::awaitable<Status> WorkerCheckpoint(std::int64_t job, int rank, std::string_view blob);
  void WorkerDone(std::int64_t job, int rank, const std::string& stop, std::int64_t steps);

  // Stops every worker (they checkpoint and exit) and leaves their jobs to resume at the next
  // start; returns when all have exited. Queued jobs stay queued.
  asio::awaitable<void> Shutdown();
  void Reload(const ManagerSettings& settings);

  std::optional<LiveJob> Live(std::int64_t id) const;
  int running() const;
  int queued() const;

 private:
  struct Job;
  asio::awaitable<void> Start(std::int64_t id);
  asio::awaitable<void> OnWorkerExit(std::int64_t id, ProcessExit exit);
  asio::awaitable<void> Finish(std::int64_t id, store::JobState state, const std::string& reason);
  void Schedule();
  int CoresInUse() const;

  asio::io_context& io_;
  asio::thread_pool& pool_;
  store::Store& store_;
  Supervisor& supervisor_;
  ManagerSettings settings_;
  std::map<std::int64_t, std::unique_ptr<Job>> jobs_;  // active: queued .. recovering
  bool shutting_down_ = false;
};

}  // namespace dtrain::server
