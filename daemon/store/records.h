// The rows of the run store as plain structs, and the job and worker state machines.
//
//   Result<JobState> s = ParseJobState("running");
//   if (s.ok() && IsValidTransition(s.value(), JobState::kRecovering)) { ... }
//
// A job moves  queued -> starting -> running -> succeeded | failed | cancelled,  and
// running|starting -> recovering -> running after a fault; queued, starting and recovering may also
// end in failed or cancelled. The only way out of a terminal state is -> queued: failed|cancelled
// when the owner resumes the job from its newest checkpoint, succeeded when a sweep promotes a
// trial that trained to an ASHA rung (config/sweep_asha.h), resuming it from its checkpoint with
// a larger train.steps (the owner's resume refuses a succeeded job). The names below are stored in
// the `state` columns and shown by the CLI, so they are part of the file format.
//
// Plain values and constexpr tables: safe for concurrent use.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/train/class_report.h"

namespace dtrain::store {

enum class JobState { kQueued, kStarting, kRunning, kRecovering, kSucceeded, kFailed, kCancelled };

std::string_view JobStateName(JobState state);
Result<JobState> ParseJobState(std::string_view name);
bool IsTerminal(JobState state);
// Whether the lifecycle above allows `from` -> `to` (a state never moves to itself).
bool IsValidTransition(JobState from, JobState to);

// A worker process row: running until its exit is recorded, then exited (it returned an exit
// status) or killed (a signal ended it).
enum class WorkerState { kRunning, kExited, kKilled };

std::string_view WorkerStateName(WorkerState state);
Result<WorkerState> ParseWorkerState(std::string_view name);

// Times are seconds since the Unix epoch (wall clock), as the store stamps them.
struct JobRecord {
  std::int64_t id = 0;
  std::string name;
  std::int64_t owner_uid = 0;
  std::int64_t owner_gid = -1;  // the submitter's gid; -1 (jobs of a store before migration 2):
                                // the owner's primary group
  JobState state = JobState::kQueued;
  int priority = 0;
  std::string spec_toml;  // the fully resolved job file text
  // The job file's tags, in its order (table job_tags; none for a job of an older store).
  std::vector<std::string> tags;
  double created = 0;
  double updated = 0;
  std::string reason;  // the reason of the latest transition
};

// A sweep (dtrain sweep submit, table sweeps) runs until every trial has ended: succeeded when
// at least one trial succeeded, failed when none did; cancelled by its owner. The three ends are
// final.
enum class SweepState { kRunning, kSucceeded, kFailed, kCancelled };

std::string_view SweepStateName(SweepState state);
Result<SweepState> ParseSweepState(std::string_view name);

// What a daemon keeps of a sweep: the sweep file as submitted, from which every trial is drawn
// again (config/sweep_file.h), and its progress.
struct SweepRecord {
  std::int64_t id = 0;
  std::string name;  // the base job's name
  std::int64_t owner_uid = 0;
  std::int64_t owner_gid = -1;
  std::string source;       // the sweep file's path where it was submitted
  std::string sweep_toml;   // the sweep file's text
  std::string job_toml;     // the base job file's text if the sweep names one (job = ...)
  std::string base_dir;     // the sweep file's folder: relative paths resolve against it
  std::string method;       // config::SweepMethodName
  std::string metric;       // the metric trials are ranked by
  std::string goal;         // config::SweepGoalName
  std::int64_t trials = 0;  // how many trials it runs
  std::int64_t max_concurrent = 1;
  SweepState state = SweepState::kRunning;
  double created = 0;
  double updated = 0;
  std::string reason;  // why it is in its state
};

// One trial of a sweep with its job: a row exists exactly when the trial's job was created (in
// the same transaction). `job` is unset once that job was removed (dtrain rm).
struct SweepTrialRecord {
  std::int64_t sweep = 0;
  std::int64_t trial = 0;  // config::Trial::index
  std::optional<std::int64_t> job;
  std::string parameters;  // JSON: [{"key", "toml", "json", "shown"}], the trial's values
  double job_updated = 0;  // read only: its job's `updated` when the row was read; 0 without one
};

struct EventRecord {
  std::int64_t job = 0;
  double time = 0;
  std::optional<JobState> from;  // nullopt for the submission event, which creates the job
  JobState to = JobState::kQueued;
  std::string reason;
};

// The restarts a job has had: its events whose reason starts "restart " (the daemon's own
// restarts after a crash of its own do not count).
int CountRestarts(std::span<const EventRecord> events);

// The event a coordinating daemon notes when Slurm grants an attempt of a job with
// cluster.scheduler = "slurm" its allocation ("Slurm job 812 granted on node[3-4]"), or an
// elastic job's further replica its own ("Slurm job 813 granted on node5 for worker 2"); the
// newest such grant among a job's events; and the grants of the newest attempt granted one, oldest
// first: its allocation and the further replicas' after it (what `status` shows). Every attempt
// starts with one allocation, so the newest grant that names no worker begins them.
struct SlurmGrant {
  std::int64_t job = 0;
  std::string nodes;
  std::optional<int> worker;  // the further replica's rank; none for an attempt's allocation
};
std::string SlurmGrantReason(const SlurmGrant& grant);
std::optional<SlurmGrant> NewestSlurmGrant(std::span<const EventRecord> events);
std::vector<SlurmGrant> AttemptSlurmGrants(std::span<const EventRecord> events);

struct WorkerRecord {
  std::int64_t id = 0;  // the handle RecordWorkerStart returned
  std::int64_t job = 0;
  int rank = 0;
  std::string role;  // e.g. "replica" or "ps"
  std::string host;
  std::int64_t pid = 0;
  WorkerState state = WorkerState::kRunning;
  std::optional<int> exit_status;  // set when state is kExited
  std::optional<int> signal;       // set when state is kKilled
  double started = 0;
  std::optional<double> ended;
  // The furthest step the job had recorded when the process ended (as its status counted it
  // then, checkpoints since pruned included); unset while it runs.
  std::optional<std::int64_t> ended_step;
};

struct MetricRow {
  std::int64_t step = 0;
  int worker = 0;
  std::string name;
  double value = 0;
  double epoch = 0;  // fractional epochs completed
  double time = 0;   // when the store received the point
};

struct LogRow {
  std::int64_t id = 0;  // increases with every appended line of any job; never reused
  int worker = 0;
  std::string stream;  // "stdout", "stderr", or a name the runner chooses
  double time = 0;
  std::string line;
};

struct CheckpointInfo {
  std::int64_t step = 0;
  double time = 0;
  std::int64_t bytes = 0;      // size of the encoded blob
  std::uint32_t checksum = 0;  // CRC32 recorded at save time (see checkpoint_format.md)
};

// The evaluation that judged a job's best model (checkpoint.keep_best, train.early_stopping):
// the model's step, the metric and its value there.
struct BestModelInfo {
  std::int64_t step = 0;
  std::string metric;  // "eval_accuracy" or "eval_loss"
  double value = 0.0;  // finite: only a finite value improves
  double time = 0.0;   // when it was stored (seconds since the epoch)
};

// The per-class report of a job's final evaluation, as kept with the job.
struct StoredClassReport {
  std::int64_t step = 0;  // the step of the final evaluation
  train::ClassReport report;
  double time = 0.0;  // when it was stored (seconds since the epoch)
};

}  // namespace dtrain::store
