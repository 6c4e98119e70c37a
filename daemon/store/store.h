// Store: the run store, one SQLite file per daemon (and ./dtrain.db per `dtrain run`) holding
// jobs, their state transitions, worker processes, metrics, logs and checkpoints.
//
//   Result<std::unique_ptr<Store>> store = Store::Open("/var/lib/dtrain/dtrain.db");
//   Result<std::int64_t> job = store.value()->CreateJob(record);      // durable on return
//   store.value()->AppendMetrics(job.value(), 0, points);            // returns at once
//   Status s = store.value()->Flush();                               // now committed
//
// Durability: CreateJob, SetJobState, the worker records and SaveCheckpoint return once their
// transaction is committed with synchronous=FULL, so an acknowledged operation survives the
// process being killed (and, the WAL being fsynced, a power loss). Metric and log appends are
// asynchronous: they are batched into few transactions and are committed when Flush() returns.
//
// Thread safety: safe for concurrent use. One writer thread (writer.h) owns the only write
// connection and carries out every change in the order it was requested; a caller's own
// requests keep their order. Reads use a pool of read-only connections, one lent to each
// reading call, so readers run in parallel and, the file being in WAL mode, neither wait for
// the writer nor delay it. A read sees every durable operation that returned before it and
// every append flushed before it.
//
// A full disk: a checkpoint that does not fit fails (its transaction rolls back; the previous
// checkpoint stays) with an error that says "database or disk is full". When opened with a
// reserve (StoreOptions), the store gives that space back to record the rest — job states,
// events, logs — rather than lose them too (writer.h).
//
// Errors are values: every failure returns a Status naming the job (and step) involved. An
// append that SQLite refuses (e.g. for a job that does not exist) is dropped without stopping
// the writer and reported by the next Flush().
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "core/train/metrics.h"
#include "daemon/store/checkpoint.h"
#include "daemon/store/records.h"

namespace dtrain::store {

class ConnectionPool;
class Writer;

// Seconds since the epoch: the clock of every time the store records.
double WallClock();

struct LatestCheckpointResult {
  std::optional<CheckpointData> checkpoint;  // the newest that verifies; nullopt if none does
  // One message per newer checkpoint that failed verification, newest first, each naming the
  // job, the step and the damage.
  std::vector<std::string> skipped;
};

struct StoreOptions {
  // Bytes kept in the file `PATH-reserve` (space_reserve.h) and given back when the disk is
  // full; 0: none. Only the store's one long-lived owner (the daemon) should keep one.
  std::uint64_t reserve_bytes = 0;
};

class Store {
 public:
  // Opens or creates the file at `path` (its directory must exist): WAL mode, foreign keys,
  // a busy timeout, and the schema migrated to this build's version. A file written by a newer
  // dtrain (a higher schema version) is refused with a message saying so. On a disk too full to
  // open it, the reserve a previous owner left (StoreOptions::reserve_bytes) is given back first.
  static Result<std::unique_ptr<Store>> Open(const std::string& path,
                                             const StoreOptions& options = {});
  ~Store();  // writes everything queued, then stops the writer
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // --- jobs (durable) ---

  // Inserts the job in state queued, with a 'submitted' event; uses name, owner_uid, owner_gid,
  // priority, spec_toml and tags of `job` and ignores its other fields. Returns the new job id.
  Result<std::int64_t> CreateJob(const JobRecord& job);
  // Moves the job to `to` and records the event, in one transaction. Refused when the
  // lifecycle (records.h) does not allow it, e.g. out of a terminal state, so a late
  // "succeeded" cannot overwrite "cancelled". `at`: when it happened (a change stored late,
  // after a full disk); now when not given. StatusCode::kNoSpace: the disk was full.
  Status SetJobState(std::int64_t job, JobState to, const std::string& reason,
                     std::optional<double> at = std::nullopt);
  // An event that changes no state (from and to are the job's current state), e.g. an async
  // replica restarted alone while the job runs on. `at` and kNoSpace as for SetJobState.
  Status NoteEvent(std::int64_t job, const std::string& reason,
                   std::optional<double> at = std::nullopt);
  // The same, and `reason` becomes the job's reason too: what it says now (an elastic job's
  // membership, "worker 1 joined at step 902: 3 of 3").
  Status NoteReason(std::int64_t job, const std::string& reason,
                    std::optional<double> at = std::nullopt);
  Result<JobRecord> GetJob(std::int64_t job);
  // Replaces the job file of a job about to resume with changed settings
  // (config/resume_settings.h) and records an event with `reason` (its state stays).
  Status SetJobSpec(std::int64_t job, const std::string& spec_toml, const std::string& reason);
  // Queues a job that has ended again (it resumes from its newest checkpoint) with `reason`, its
  // job file replaced first by a non-empty `spec_toml` (an event `spec_reason`), in one
  // transaction: a crash leaves the job ended with its old file or queued with the new one,
  // never one without the other (an owner's resume with settings, an ASHA promotion). Refused,
  // changing nothing, unless the job has ended and the lifecycle (records.h) allows it.
  Status RequeueJob(std::int64_t job, const std::string& reason, const std::string& spec_toml = "",
                    const std::string& spec_reason = "");
  // Deletes a job that has ended with everything recorded of it (events, workers, metrics, logs,
  // checkpoints) and returns its record; refused, deleting nothing, while it has not ended. Its
  // id is never given to another job. The file keeps the space until Reclaim.
  Result<JobRecord> DeleteJob(std::int64_t job);
  // Gives the space deleted rows left free back to the file system: a few MiB per transaction,
  // so that other writes go in between, then the WAL is checkpointed and truncated. A file made
  // before stores kept incremental vacuum on is rewritten once (VACUUM), holding other writes
  // off meanwhile (readers go on). Returns by how many bytes the database file shrank.
  Result<std::uint64_t> Reclaim();
  Result<std::vector<JobRecord>> ListJobs();                  // by id
  Result<std::vector<EventRecord>> Events(std::int64_t job);  // in the order they happened
  // How many jobs are in each state (states with none are absent).
  Result<std::vector<std::pair<JobState, std::int64_t>>> CountJobsByState();
  // The log lines stored for the jobs of `owner_uid`: how many, and their bytes.
  struct LogVolume {
    std::uint64_t lines = 0, bytes = 0;
  };
  Result<LogVolume> LogVolumeOfOwner(std::int64_t owner_uid);

  // --- worker processes (durable) ---

  // Records a started worker process; returns the handle RecordWorkerExit takes. `at` and
  // kNoSpace as for SetJobState.
  Result<std::int64_t> RecordWorkerStart(std::int64_t job, int rank, std::string_view role,
                                         std::string_view host, std::int64_t pid,
                                         std::optional<double> at = std::nullopt);
  // signal > 0: the process was killed by that signal (exit_status is then not stored);
  // otherwise it exited with exit_status. Refused for a worker whose exit is already recorded.
  // `at` and kNoSpace as for SetJobState.
  Status RecordWorkerExit(std::int64_t worker, int exit_status, int signal,
                          std::optional<double> at = std::nullopt);
  Result<std::vector<WorkerRecord>> Workers(std::int64_t job);  // in start order

  // --- metrics and logs (asynchronous) ---

  // Queue rows stamped with the current time and return at once (see writer.h for the
  // backpressure limit).
  void AppendMetrics(std::int64_t job, int worker, std::span<const train::MetricPoint> points);
  void AppendLog(std::int64_t job, int worker, std::string_view stream, std::string_view line);
  // Returns once everything appended before the call is committed; an error if appended rows
  // (from any thread) were dropped since the previous Flush, which reports each drop once.
  Status Flush();
  // Rows with step > after_step, of one name (or all names when name_filter is empty), by
  // step and then in append order.
  Result<std::vector<MetricRow>> Metrics(std::int64_t job, const std::string& name_filter,
                                         std::int64_t after_step = -1);
  // The newest row of each metric name (by append order), ordered by name.
  Result<std::vector<MetricRow>> LatestMetrics(std::int64_t job);
  // At most `limit` rows appended after the row `after_id` (0: from the first), each with its
  // id, in append order: pass the last id seen to follow a job's metrics.
  Result<std::vector<std::pair<std::int64_t, MetricRow>>> MetricsAfter(std::int64_t job,
                                                                       std::int64_t after_id,
                                                                       std::size_t limit);
  // The newest row of metric `name` of each worker, by worker.
  Result<std::vector<MetricRow>> LatestMetricPerWorker(std::int64_t job, const std::string& name);
  // Per worker, the sum of each of `names` over all its rows (rows: worker, name, value = the
  // sum; step, epoch and time of its newest row), by worker then name.
  Result<std::vector<MetricRow>> MetricSums(std::int64_t job, std::span<const std::string> names);
  // At most `limit` lines with id > after_id, by id: pass the last id seen to follow a log.
  Result<std::vector<LogRow>> Logs(std::int64_t job, std::int64_t after_id = 0,
                                   std::size_t limit = 10000);

  // --- checkpoints ---

  // Encodes (on the calling thread) and stores the checkpoint, replacing one of the same step,
  // and deletes all but the newest `keep` (>= 1) checkpoints of the job by step, in one
  // durable transaction.
  Status SaveCheckpoint(std::int64_t job, const CheckpointView& checkpoint, int keep);
  Status SaveCheckpoint(std::int64_t job, const CheckpointData& checkpoint, int keep) {
    return SaveCheckpoint(job, ViewOf(checkpoint), keep);
  }
  // The newest checkpoint whose blob verifies (checkpoint_format.md) and agrees with its row;
  // damaged newer ones are skipped and reported. An error only when the store cannot be read.
  Result<LatestCheckpointResult> LatestCheckpoint(std::int64_t job);
  // One checkpoint by step, verified; an error naming the job and step if absent or damaged.
  Result<CheckpointData> LoadCheckpoint(std::int64_t job, std::int64_t step);
  Result<std::vector<CheckpointInfo>> Checkpoints(std::int64_t job);  // by step, oldest first

  // --- sweeps (durable) ---

  // Inserts the sweep in state running; uses every field of `sweep` but id, state, created,
  // updated and reason. Returns the new sweep id.
  Result<std::int64_t> CreateSweep(const SweepRecord& sweep);
  // Creates trial `trial.trial` of its sweep: the job (as CreateJob) and the trial's row naming
  // it, in one transaction, so that a crash leaves both or neither. Refused, creating nothing,
  // when the sweep is not running or has that trial already. Returns the new job id.
  Result<std::int64_t> CreateTrialJob(const SweepTrialRecord& trial, const JobRecord& job);
  // Moves a running sweep to `to` (an end) with `reason`; refused once it has ended.
  Status SetSweepState(std::int64_t sweep, SweepState to, const std::string& reason);
  Result<SweepRecord> GetSweep(std::int64_t sweep);
  Result<std::vector<SweepRecord>> ListSweeps();  // by id
  // The sweep's trials that have (had) a job, by trial index, each with its job's `updated`
  // time read in the same query (what a cache of a trial's standing is keyed on).
  Result<std::vector<SweepTrialRecord>> SweepTrials(std::int64_t sweep);

  // --- the best model ---

  // Stores `model` (a checkpoint of the evaluated parameters; its step best.step) as the job's
  // best model, replacing the one before when it is better by the same metric (or judged by
  // another), in one durable transaction: a crash leaves the previous best or the new one.
  // best.time is set here.
  Status SaveBestModel(std::int64_t job, const BestModelInfo& best, const CheckpointView& model);
  // The job's best model's evaluation; nullopt when it has none.
  Result<std::optional<BestModelInfo>> BestModel(std::int64_t job);
  // The job's best model, verified like a checkpoint; nullopt when it has none.
  Result<std::optional<CheckpointData>> LoadBestModel(std::int64_t job);

  // Keeps `report` as the per-class report of the job's final evaluation at `step`, replacing any
  // before (a resumed run's), in one durable transaction.
  Status SaveClassReport(std::int64_t job, std::int64_t step, const train::ClassReport& report);
  // The job's final per-class report, its ratios computed anew from the stored matrix; nullopt
  // when it has none.
  Result<std::optional<StoredClassReport>> FinalClassReport(std::int64_t job);

 private:
  Store(std::unique_ptr<ConnectionPool> readers, std::unique_ptr<Writer> writer);
  // NoteEvent, and with `as_reason` NoteReason.
  Status NoteEventIn(std::int64_t job, const std::string& reason, bool as_reason,
                     std::optional<double> at);

  std::unique_ptr<ConnectionPool> readers_;
  std::unique_ptr<Writer> writer_;  // declared last: destroyed (drained) first
};

}  // namespace dtrain::store
