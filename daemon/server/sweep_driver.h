// SweepDriver: the daemon's sweeps (dtrain sweep submit, man dtrain-sweep.toml(5)). A sweep is a
// row of the store (its file as submitted) and one row per trial whose job exists; its trials
// are ordinary jobs of the JobManager, owned by the sweep's owner and tagged "sweep-ID". The
// driver keeps at most max_concurrent of a sweep's trials queued or running, creates the next
// trial's job as one ends, and ends the sweep once every trial has ended: succeeded when at least
// one trial succeeded, failed when none did.
//
//   SweepDriver sweeps(io, pool, store, jobs);
//   co_await jobs.Reconcile();
//   co_await sweeps.Start();                      // the store's running sweeps go on
//   SubmittedSweep s = co_await sweeps.Submit(submission, owner);
//
// Exactly once: a trial's job is created together with its trial row (Store::CreateTrialJob, one
// transaction, UNIQUE (sweep, trial)), and which trial starts next is decided from the rows alone
// (NextTrial). A daemon killed at any moment leaves each trial with one job or none: at the next
// start the jobs that exist are recovered by the JobManager as any job (never created again), the
// trials without a row are created, and a trial whose job has ended is never run again.
//
// Lives on the io_context's thread, as the JobManager: every method must be called there. One
// pass over the sweeps at a time.
#pragma once

#include <sys/types.h>

#include <asio/awaitable.hpp>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config/sweep_file.h"
#include "daemon/server/job_manager.h"
#include "daemon/store/store.h"

namespace dtrain::server {

// The largest sweep file, and base job file, a sweep may be submitted with.
inline constexpr std::size_t kMaxSweepText = 1u << 20;

// A sweep as `sweep_submit` sends it: the sweep file's text and path, its folder (absolute:
// relative paths resolve against it) and the base job file's text when the sweep names one.
struct SweepSubmission {
  std::string sweep_toml;
  std::string job_toml;
  std::string source;
  std::string base_dir;
};

struct SubmittedSweep {
  std::int64_t id = 0;
  std::optional<Refusal> refusal;
};

// The trial the sweep creates next, from its trial rows alone: grid and random trials do not
// depend on each other, so the lowest index without a row; nothing once every trial has one.
// The one place a method chooses (ASHA's promotions and new trials would be chosen here).
std::optional<std::int64_t> NextTrial(const store::SweepRecord& sweep,
                                      const std::vector<store::SweepTrialRecord>& rows);

// The trial's values as stored in its row (SweepTrialRecord::parameters) and sent in a TRIAL
// (control_protocol.md): [{"key", "toml", "json", "shown"}], ParameterValue's texts.
std::string TrialParametersJson(const config::Trial& trial);

class SweepDriver {
 public:
  SweepDriver(asio::io_context& io, asio::thread_pool& pool, store::Store& store, JobManager& jobs);
  ~SweepDriver();

  // After JobManager::Reconcile: drives the sweeps the store says are running, and cancels the
  // trials left running of a sweep cancelled just before the previous daemon died.
  asio::awaitable<Status> Start();
  // Checks the sweep as a job submission is checked — every trial's job, as its owner's — and
  // refuses it whole (invalid_job, denied, ...) or stores it and starts its first trials.
  asio::awaitable<SubmittedSweep> Submit(SweepSubmission submission, Owner owner);
  // Ends a running sweep as cancelled and cancels its trials not ended (those ended stay);
  // refused unless `caller` owns it or is root (denied), or when it has ended (conflict).
  asio::awaitable<std::optional<Refusal>> Cancel(std::int64_t id, uid_t caller);
  // A job ended: the sweeps are looked at again (a pass, soon, on this thread).
  void JobEnded() { Kick(); }
  // The sweep's trials as its file generates them (each trial's validated job); loaded once.
  asio::awaitable<Result<std::shared_ptr<const config::SweepLoadResult>>> Trials(
      const store::SweepRecord& sweep);

 private:
  // Another pass over the running sweeps (after a trial's job ended, a sweep came, ...).
  void Kick();
  asio::awaitable<void> Drive();
  // One running sweep: trials started up to max_concurrent, or the sweep ended.
  asio::awaitable<void> Advance(std::int64_t id);
  // Creates the job of trial `index` of the sweep; false when the pass should stop.
  asio::awaitable<bool> StartTrial(const store::SweepRecord& sweep, std::int64_t index);
  asio::awaitable<void> EndSweep(const store::SweepRecord& sweep,
                                 const std::vector<store::SweepTrialRecord>& rows);
  asio::awaitable<void> CancelTrials(std::int64_t id, uid_t caller);

  asio::io_context& io_;
  asio::thread_pool& pool_;
  store::Store& store_;
  JobManager& jobs_;
  std::set<std::int64_t> running_;  // the sweeps being driven
  std::map<std::int64_t, std::shared_ptr<const config::SweepLoadResult>> loaded_;
  bool driving_ = false;  // Drive is running
  bool again_ = false;    // Kick came during a pass
};

}  // namespace dtrain::server
