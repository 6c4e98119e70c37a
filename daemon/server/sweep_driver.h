// SweepDriver: the daemon's sweeps (dtrain sweep submit, man dtrain-sweep.toml(5)). A sweep is a
// row of the store (its file as submitted) and one row per trial whose job exists; its trials
// are ordinary jobs of the JobManager, owned by the sweep's owner and tagged "sweep-ID". The
// driver keeps at most max_concurrent of a sweep's trials queued or running, promotions
// included, and takes each sweep's next action (sweep_standing.h: start a trial, promote an ASHA
// trial to its next rung, wait, or end) as a trial's job ends. A sweep ends when its method is
// done: succeeded when at least one trial's job succeeded (ASHA: one completed a rung), failed
// when none did.
//
//   SweepDriver sweeps(io, pool, store, jobs);
//   co_await jobs.Reconcile();
//   co_await sweeps.Start();                      // the store's running sweeps go on
//   SubmittedSweep s = co_await sweeps.Submit(submission, owner);
//
// Exactly once: a trial's job is created together with its trial row (Store::CreateTrialJob, one
// transaction, UNIQUE (sweep, trial)), an ASHA promotion re-queues the trial's job with its next
// rung's train.steps in one transaction (JobManager::Continue, Store::RequeueJob), and what
// happens next is decided from the store alone (ReadStandings, NextSweepAction). A daemon killed
// at any moment leaves each trial with one job or none, at a rung or queued toward the next: at
// the next start the jobs that exist are recovered by the JobManager as any job (never created
// again), the trials without a row are created, a trial whose job has ended is never run again,
// and a promotion not yet committed is decided again from the same rows.
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
#include "daemon/server/standing_cache.h"
#include "daemon/server/sweep_standing.h"
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
  // What the daemon's reads of its sweeps' standings keep (ReadStandings, SweepStatusJson):
  // thread-safe, lives as long as the driver.
  TrialStandingCache& standing_cache() { return standings_; }

 private:
  // Another pass over the running sweeps (after a trial's job ended, a sweep came, ...).
  void Kick();
  asio::awaitable<void> Drive();
  // One running sweep: its actions taken up to max_concurrent trials active, or it ended.
  asio::awaitable<void> Advance(std::int64_t id);
  // The standings of the sweep's trials: read from the store for ASHA (and with `full`), else
  // from the rows and the jobs active here. nullopt when the store cannot be read.
  asio::awaitable<std::optional<std::vector<TrialStanding>>> Standings(
      const store::SweepRecord& sweep, const config::SweepLoadResult& loaded,
      const std::vector<store::SweepTrialRecord>& rows, bool full);
  // Creates the job of trial `index` of the sweep; false when the pass should stop.
  asio::awaitable<bool> StartTrial(const store::SweepRecord& sweep,
                                   const config::SweepLoadResult& loaded, std::int64_t index);
  // Resumes the trial's job to the rung `promotion` names; false when the pass should stop.
  asio::awaitable<bool> PromoteTrial(const store::SweepRecord& sweep, const TrialStanding& trial,
                                     const config::AshaAction& promotion);
  // Sets the reason of each trial's job paused at an ASHA rung below the last: paused while the
  // sweep runs, stopped (`ended`) once it has ended.
  asio::awaitable<void> NoteRungs(const config::SweepSpec& spec,
                                  const std::vector<TrialStanding>& standings, bool ended);
  asio::awaitable<void> EndSweep(const store::SweepRecord& sweep,
                                 const config::SweepLoadResult& loaded,
                                 const std::vector<store::SweepTrialRecord>& rows);
  // Ends the sweep as failed with `reason`.
  asio::awaitable<void> FailSweep(std::int64_t id, const std::string& reason);
  asio::awaitable<void> CancelTrials(std::int64_t id, uid_t caller);

  asio::io_context& io_;
  asio::thread_pool& pool_;
  store::Store& store_;
  JobManager& jobs_;
  std::set<std::int64_t> running_;  // the sweeps being driven
  std::map<std::int64_t, std::shared_ptr<const config::SweepLoadResult>> loaded_;
  TrialStandingCache standings_;
  bool driving_ = false;  // Drive is running
  bool again_ = false;    // Kick came during a pass
};

}  // namespace dtrain::server
