// The daemon's JOB object (daemon/control_protocol.md) as the CLI shows it: parsed into plain
// fields (missing ones read as empty), printed in detail (`status JOB`), as a table row
// (`status`, `list`) or as a one-line result (`wait`, `submit`), and the exit code its final
// state stands for. With --json every command prints the daemon's object itself, unchanged.
//
//   JobInfo job = ParseJob(reply["job"]);
//   PrintJobDetail(job, std::cout, ColorOnStdout());
//   return ExitCodeForState(job.state);   // succeeded 0, failed 1, cancelled 130
//
// Pure functions over values plus printing to the given stream: one thread at a time per stream.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace dtrain::cli {

struct WorkerInfo {
  std::int64_t rank = 0;
  std::string role;
  std::string host;
  std::int64_t pid = 0;
  std::string state;
  std::optional<std::int64_t> exit_status;
  std::optional<std::int64_t> signal;
  double started = 0;
  double ended = 0;  // 0 while it runs
};

struct EventInfo {
  double time = 0;
  std::string from;  // empty for the submission event
  std::string to;
  std::string reason;
};

// A Slurm allocation granted to the job's attempt (cluster.scheduler = "slurm").
struct SlurmGrantInfo {
  std::int64_t job = 0;  // Slurm's job id
  std::string nodes;
  std::optional<std::int64_t> worker;  // an elastic job's further replica; none: the allocation
};

struct JobInfo {
  std::int64_t id = 0;
  std::string name;
  std::string state;
  std::string reason;
  std::string owner;  // a user name where the daemon sent a uid that this host knows
  std::int64_t priority = 0;
  std::vector<std::string> tags;
  double created = 0;
  double updated = 0;
  std::int64_t step = 0;
  std::optional<std::int64_t> total_steps;  // the steps the run plans in all, once known
  std::optional<double> steps_per_sec;      // its pace since it started (or resumed)
  std::optional<double> eta_seconds;        // the time left at that pace, while it runs
  // A sync job's place in its data: the epoch (0-based), the rows of it taken, an epoch's rows.
  std::optional<std::int64_t> epoch, epoch_rows, rows_per_epoch;
  std::int64_t restarts = 0;
  // The best model's evaluation (best_step, best_metric, best_value), when the job keeps one.
  std::optional<std::int64_t> best_step;
  std::string best_metric;
  double best_value = 0.0;
  // cluster.scheduler = "slurm": every grant of its newest granted attempt, oldest first (from a
  // daemon that tells only the newest allocation, that one); empty: none.
  std::vector<SlurmGrantInfo> slurm_grants;
  std::vector<std::pair<std::string, double>> metrics;  // latest value per name, by name
  std::vector<WorkerInfo> workers;
  std::vector<EventInfo> events;  // oldest first; empty in `list` replies
};

JobInfo ParseJob(const nlohmann::json& job);

// "baseline, lr-sweep": tags as `status` and `list` write them.
std::string JoinTags(const std::vector<std::string>& tags);

// The job states, in lifecycle order, as the daemon names them.
std::vector<std::string> JobStateNames();
// succeeded 0, failed 1, cancelled 130 (kExitInterrupted); any other state kExitFailed.
int ExitCodeForState(const std::string& state);
// How many distinct ranks the job's workers have.
int DistinctRanks(const JobInfo& job);

// "100/4690 (2%)": the step, of the total steps when known; "100" otherwise.
std::string StepOfTotal(const JobInfo& job);
// The one metric `list` shows of a job, "eval_accuracy 0.8459": the latest of eval_accuracy,
// eval_auc, eval_mse, eval_loss, train_loss, objective (the first it has); "-" for none.
std::string HeadlineMetric(const JobInfo& job);

// Everything `status JOB` shows: state and reason, owner, priority, times, step (of the total,
// with its pace and ETA while it runs), restarts, the Slurm job and nodes of a job placed by
// Slurm, the latest metrics (the window counters apart, train::IsWindowCounter), the workers
// and the last `max_events` events.
void PrintJobDetail(const JobInfo& job, std::ostream& out, bool color, int max_events = 10);
// One line per job under a header: id, name, state, step (of the total), metric
// (HeadlineMetric), priority, owner, age, reason.
void PrintJobTable(const std::vector<JobInfo>& jobs, std::ostream& out, bool color);
// "job 7 (fashion-mlp) succeeded at step 1890: completed", then the latest metrics.
void PrintJobResult(const JobInfo& job, std::ostream& out, bool color);

}  // namespace dtrain::cli
