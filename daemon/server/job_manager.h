// JobManager: the daemon's scheduler and the coordinator of every job it accepted — the queue
// (priority, then submission order), the host limits (max_jobs, cores), starting each job's
// processes (cluster.workers replicas, then the parameter-server shards of its mode), the
// rendezvous (a process is admitted once every process of the job has said hello, and then
// learns every process's data-plane address), recording what they send, and carrying out what
// each job's attempt machine (attempt_machine.h) decides when they exit: success once every
// process ended well; after the first failure the others are stopped, and once all have exited
// the job is cancelled, restarted from the newest checkpoint (up to max_restarts), failed, or —
// when the daemon stops — left to recover at the next start. An async replica, or an elastic
// job's, is replaced alone while the others go on (replica_restart.cc); an elastic job's members
// regroup without the lost one and take its replacement in (elastic_regroup.cc), and an elastic
// job short of cores starts with the replicas that fit and takes the others in as cores free up
// (elastic_growth.cc).
//
//   JobManager jobs(io, pool, store, supervisor, settings);
//   jobs.SetChannelSink([&](int fd) { server.ServeWorkerChannel(fd); });
//   co_await jobs.Reconcile();                       // before serving: resume what was running
//   Submitted s = co_await jobs.Submit(text, "job.toml", {uid, gid}, {}, {});
//
// Every process of a job runs as the job's owner (process_launcher.h), on this host and on peers:
// its uid, its gid and that user's supplementary groups. A local worker finds its coordinator
// connection on fd 3 — one end of a socket pair whose other end goes to the channel sink — and
// its token on standard input. A daemon that cannot change users (not root) runs only its own
// user's jobs.
//
// A job's state changes and events reach the store in the order they happened (StoreState,
// StoreEvent): one the store could not take for a full disk waits, with every later one, until
// it is stored.
//
// Lives on the io_context's thread: every method must be called there (coroutines resume there
// too). Store calls that wait run on the blocking pool. Thread-compatible, not thread-safe.
#pragma once

#include <sys/types.h>

#include <asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/daemon_config.h"
#include "config/job.h"
#include "core/net/auth.h"
#include "core/train/metrics.h"
#include "daemon/server/fair_share.h"
#include "daemon/server/log_quota.h"
#include "daemon/server/placement.h"
#include "daemon/server/process_launcher.h"
#include "daemon/server/regroup_round.h"
#include "daemon/server/supervisor.h"
#include "daemon/store/job_removal.h"
#include "daemon/store/store.h"

namespace asio {
class io_context;
class thread_pool;
}  // namespace asio

namespace dtrain::server {

// How long the survivors of a failed attempt get to exit after SIGTERM (at most the daemon's
// grace): blocked on a dead peer, they rarely can.
inline constexpr std::chrono::milliseconds kFailedAttemptGrace{2000};
// How long a process's failure (an exit status, not a signal) waits before it becomes the
// attempt's reason, so that a peer's death by a signal, usually its cause, is named instead.
inline constexpr std::chrono::milliseconds kBlameGrace{300};
// A job's state change or event, or a process's start or exit, that the store could not take
// for a full disk (the space it keeps for such records taken by another program too) is tried
// again after kStoreRetryFirst, then at doubling intervals up to kStoreRetryMost, until it is
// stored or the daemon stops (whose next start reconciles the job): a job's record never keeps
// saying "running" once space is back, and its records are stored in the order they happened.
inline constexpr std::chrono::milliseconds kStoreRetryFirst{250};
inline constexpr std::chrono::milliseconds kStoreRetryMost{5000};

struct ManagerSettings {
  // Whether job processes run as their owners (a root daemon); otherwise every job must be the
  // daemon's own user's and its processes run as that user.
  bool run_as_owner = false;
  int max_jobs = 2;
  int cores = 1;  // resolved: > 0
  std::chrono::milliseconds grace{10000};
  int max_restarts = 3;      // for jobs whose file does not say
  std::string worker_exe;    // dtraind, started as `dtraind worker ...`
  std::string data_host = "127.0.0.1";  // where this host's workers listen for their peers
  config::DaemonLimits limits;           // users' shares and what a job may ask for
  // Several hosts: this node's name, the nodes a job may be placed on (this one first, then the
  // peers; none: this one only), and what workers on peers need to reach this coordinator.
  std::string node_name;
  std::function<std::vector<NodeCapacity>()> nodes;
  std::string coordinator;  // [cluster] listen, a wildcard host replaced by data_host
  std::string key_file;     // handed to the processes that start workers on peers
  std::uint64_t log_quota = config::kDefaultLogQuota;  // bytes of lines stored per attempt
  // Also told every line a worker prints (dtrain run echoes them); optional.
  std::function<void(std::int64_t job, int rank, std::string_view stream, std::string_view line)>
      on_line;
  // The daemon's own log, for what the store could not take (optional).
  std::function<void(std::string_view message)> warn;
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

// A submission as Submit checks it: the job it would be (its cores on this host), or why not.
struct CheckedJob {
  config::JobConfig config;
  int cores = 0;
  std::optional<Refusal> refusal;
};

// What `rm` or `prune` removed from the store (or, for a dry run, would remove).
struct Removed {
  std::vector<store::JobRecord> jobs;
  std::uint64_t reclaimed = 0;  // bytes the store's file shrank by
  std::optional<Refusal> refusal;
};

// A process's data-plane address, as the rendezvous hands it out.
struct PeerAddress {
  int rank = 0;
  std::string role;  // "replica" or "server"
  std::string host;
  std::uint16_t port = 0;
  std::uint16_t partition_port = 0;  // model parallelism: its listener for its replica's ring
};

// What a connecting worker gets: the job, to resume from a checkpoint blob, and every process of
// the job by rank.
struct Admission {
  std::string spec_toml;
  std::string data_token;  // every data-plane connection of the attempt opens with it
  std::int64_t resume_step = -1;
  // An elastic job's replacement: it builds nothing until its `regroup` is answered, and then
  // takes a member's state (regroup_round.h).
  bool joining = false;
  // An elastic job started with fewer replicas than cluster.workers: the first membership's
  // ranks (ascending). Empty: every rank.
  std::vector<int> members;
  std::string checkpoint_blob;  // this process's: its partition's part of the checkpoint
  std::vector<PeerAddress> peers;
  std::chrono::milliseconds heartbeat_timeout{5000};  // the job's cluster.heartbeat_timeout
};

// What a member of an elastic job's new membership is told (`regroup`'s answer): the round's
// answer and every rank's current address.
struct Regrouped {
  RegroupAnswer answer;
  std::vector<PeerAddress> peers;
};

// In-memory facts about an active job that the store does not hold.
struct LiveJob {
  std::string pending_reason;  // why a queued job waits
  int restarts = 0;
  int batch_size = 0;  // [train] batch_size: rows per step and replica
  int lead_rank = 0;   // config::LeadRank: the process whose results are the job's
  std::int64_t epochs = 0, steps = 0;  // [train] epochs and steps: the run's length (0: no limit)
};

class JobManager {
 public:
  JobManager(asio::io_context& io, asio::thread_pool& pool, store::Store& store,
             Supervisor& supervisor, ManagerSettings settings);
  ~JobManager();

  // Re-queues what the store says was queued, starting, running or recovering (its processes
  // died with the previous daemon) and starts what fits. Reconcile, Submit and Adopt: the
  // intake (job_intake.cc).
  asio::awaitable<Status> Reconcile();

  // `trial`: the job is that trial of a sweep, created with its row (Store::CreateTrialJob).
  asio::awaitable<Submitted> Submit(const std::string& job_toml, const std::string& source,
                                    Owner owner, std::optional<std::string> name,
                                    std::optional<int> priority,
                                    std::optional<store::SweepTrialRecord> trial = {});
  // What Submit checks before it creates the job: the daemon is not stopping, it may run the
  // owner's jobs, the job file is valid and fits this host and the owner's [limits].
  asio::awaitable<CheckedJob> CheckSubmission(const std::string& job_toml,
                                              const std::string& source, Owner owner,
                                              std::optional<std::string> name,
                                              std::optional<int> priority);
  // Returns once the job has ended (queued jobs at once; running ones once their worker exited).
  asio::awaitable<std::optional<Refusal>> Cancel(std::int64_t id, uid_t caller);

  // The lifecycle of ended jobs (job_lifecycle.cc); each is refused (denied) unless `caller`
  // owns the job or is root. Resume: a failed or cancelled job is queued again under its id, as
  // a new attempt that continues from its newest checkpoint, with `overrides` of what may change
  // on resume (config/resume_settings.h; invalid_job for anything else) recorded in its job
  // file. Remove: deletes an ended job and all it recorded, and gives the space back (conflict
  // while it is queued or running). Prune: removes the ended jobs `filter` selects that are not
  // active here (filter.owner: the caller, unless root); a dry run only lists them. Removing a
  // user's jobs frees their share of [limits] log_quota_per_user.
  asio::awaitable<std::optional<Refusal>> Resume(std::int64_t id, uid_t caller,
                                                 std::vector<std::string> overrides);
  // The daemon's own resume of a job that succeeded, to train further from its newest
  // checkpoint with `overrides` (an ASHA promotion: a larger train.steps), queued with `reason`:
  // as Resume, but for no caller, and refused (conflict) unless the job has ended succeeded.
  asio::awaitable<std::optional<Refusal>> Continue(std::int64_t id,
                                                   std::vector<std::string> overrides,
                                                   std::string reason);
  asio::awaitable<Removed> Remove(std::int64_t id, uid_t caller);
  asio::awaitable<Removed> Prune(store::PruneFilter filter, bool dry_run);

  // Returns once every process of the job has said hello (or the rendezvous failed: a process
  // exited, or cluster.timeout_seconds passed); rendezvous.cc. `slurm_task`: the hello came on a
  // channel opened without the cluster key, which only a process of a job placed by Slurm may
  // use.
  asio::awaitable<Result<Admission>> AdmitWorker(std::int64_t job, int rank,
                                                 const std::string& token,
                                                 const std::string& data_host,
                                                 std::uint16_t data_port,
                                                 std::uint16_t partition_port,
                                                 bool slurm_task = false);
  void WorkerMetrics(std::int64_t job, int rank, std::span<const train::MetricPoint> points);
  // Rank `rank` sent a checkpoint (replica 0, or with model parallelism replica 0's partitions,
  // each its part: the parts of one step are stored as one checkpoint once all have come, and
  // each caller returns then). Returns once it is committed, or why it was not.
  asio::awaitable<Status> WorkerCheckpoint(std::int64_t job, int rank, std::string_view blob);
  // The checkpoint writer of the job sent its best model (a `best model` frame). Returns once it
  // is committed, or why it was not (which fails the attempt, as a checkpoint's failure does).
  asio::awaitable<Status> WorkerBestModel(std::int64_t job, int rank, std::string_view payload);
  // A worker's `class_report`: the final evaluation's confusion matrix (JSON rows of counts) at
  // `step`, kept with the job. Refused unless the worker writes the job's checkpoints and the
  // rows are a matrix of 2 to train::kMaxReportClasses classes of counts.
  asio::awaitable<Status> WorkerClassReport(std::int64_t job, int rank, std::int64_t step,
                                            std::string confusion_rows);
  // The process of the job admitted with `token` as rank `rank` has sent nothing for `silence`
  // (longer than cluster.heartbeat_timeout): it is killed now and the attempt recovers as after
  // a crash. Nothing happens when that process is gone or replaced already.
  void WorkerSilent(std::int64_t job, int rank, const std::string& token,
                    std::chrono::milliseconds silence);
  // Elastic jobs (elastic_regroup.cc): the process admitted with `token` as rank `rank` asks to
  // regroup, having trained last in membership `membership` and completed `completed_step` steps
  // (both -1: a replacement). Returns once its round completed: the new membership, or why not
  // (the round failed the attempt, or the process is no member).
  asio::awaitable<Result<Regrouped>> WorkerRegroup(std::int64_t job, int rank,
                                                   const std::string& token, int membership,
                                                   std::int64_t completed_step);
  // The epoch of the round that process `rank` (admitted with `token`) is to be told
  // `regroup_now` of, once: its channel writes it right after reading a frame from it.
  std::optional<int> TakeRegroupNotice(std::int64_t job, int rank, const std::string& token);
  // `stop` "no_data": the process cannot read the job's data where it runs; "out_of_memory": it
  // does not fit its memory there; "unsupported_cpu": its host's CPU cannot run the job as
  // written (train.precision = "bf16" without native bf16); `error` says why: the job then fails
  // without restarts.
  // `reason`, when given by the job's first process, is the job's reason if it succeeds (an
  // L-BFGS run: "converged (gradient tolerance) after 37 iterations").
  void WorkerDone(std::int64_t job, int rank, const std::string& stop, std::int64_t steps,
                  const std::string& error = "", const std::string& reason = "");
  // Starts an existing job of the store that is queued or recovering (dtrain run's embedded
  // coordinator); the daemon finds its jobs with Reconcile instead.
  asio::awaitable<Status> Adopt(std::int64_t id);
  // Whether the job is still active (queued .. recovering) here.
  bool Active(std::int64_t id) const { return jobs_.count(id) != 0; }

  // Stops every worker (they checkpoint and exit) and leaves their jobs to resume at the next
  // start; returns when all have exited. Queued jobs stay queued.
  asio::awaitable<void> Shutdown();
  void Reload(const ManagerSettings& settings);

  std::optional<LiveJob> Live(std::int64_t id) const;
  int running() const;
  int queued() const;
  int cores() const { return settings_.cores; }
  // Where the daemon's ends of local workers' coordinator connections go (a connected Unix
  // socket each, to be served as a worker channel). Must be set before any job starts.
  void SetChannelSink(std::function<void(int fd)> sink) {
    launcher_.SetChannelSink(std::move(sink));
  }
  // Told the id of each job that ended here, once its end is in the store (the sweep driver).
  void SetJobEndSink(std::function<void(std::int64_t id)> sink) { on_end_ = std::move(sink); }

 private:
  struct Process;
  struct Job;
  asio::awaitable<void> Start(std::int64_t id);
  asio::awaitable<void> OnWorkerExit(std::int64_t id, std::uint64_t attempt, int rank,
                                     ProcessExit exit);
  // After the first failure of an attempt: remembers why, ends its rendezvous, stops the others.
  void FailAttempt(Job& job, const std::string& why);
  // Records that the job is recovering, `reason` saying why.
  asio::awaitable<void> MarkRecovering(std::int64_t id, std::string reason);
  // Job `id` while `attempt` is still its current attempt, else null (the job ended, or moved on
  // to another attempt): what a coroutine of that attempt asks after each co_await.
  Job* Current(std::int64_t id, std::uint64_t attempt);
  // The active job `id` and its process `rank`; both null when there is no such process.
  std::pair<Job*, Process*> FindProcess(std::int64_t id, int rank);
  // Starts process `p` of attempt `attempt` (its exit goes to OnWorkerExit), setting its pid
  // and the time it started.
  Status SpawnProcess(std::int64_t id, std::uint64_t attempt, Process& p);
  // (Re)reads what the store holds of `uid`'s logs into their [limits] log_quota_per_user.
  asio::awaitable<void> ChargeUserLogs(uid_t uid);
  // After jobs were deleted: gives the space back and recharges their owners' log quotas.
  asio::awaitable<std::uint64_t> AfterRemoval(const std::vector<store::JobRecord>& removed);
  // Whether `caller` may change job `id`: a refusal unless the job exists, is the caller's (or
  // the caller is root), has ended, is not active here and is not being changed already; else
  // nullopt with *record filled in. `what` names the change in messages ("resume", "remove").
  asio::awaitable<std::optional<Refusal>> CheckEndedJob(std::int64_t id, uid_t caller,
                                                        const std::string& what,
                                                        store::JobRecord* record);
  // Resume's and Continue's part once CheckEndedJob passed: the job file with `overrides` and
  // the queued state in one store transaction (Store::RequeueJob), then the job adopted here.
  asio::awaitable<std::optional<Refusal>> Requeue(const store::JobRecord& record,
                                                  const std::vector<std::string>& overrides,
                                                  const std::string& reason);
  // A line a process of job `id` printed: stored while the attempt's log quota allows.
  void OnLine(std::int64_t id, int rank, std::string_view stream, std::string_view line);
  // A worker process of a job: its rank and pid.
  struct ProcessKey {
    std::int64_t job = 0;
    int rank = 0;
    pid_t pid = 0;
    auto operator<=>(const ProcessKey&) const = default;
  };
  // An exit seen before the process's row was stored, and when it happened.
  struct ExitSeen {
    ProcessExit exit;
    double at = 0;
  };
  // Records that process `rank` (pid `pid`) of the attempt started (at its Process::started),
  // and its exit once seen: also when the row is stored late (a full disk's failure is tried
  // again, as for StoreState, until stored, even after the attempt ended).
  asio::awaitable<void> RecordStart(std::int64_t id, std::uint64_t attempt, int rank, pid_t pid);
  asio::awaitable<void> RecordStartLater(ProcessKey key, std::uint64_t attempt,
                                         std::function<Status()> write,
                                         std::shared_ptr<std::int64_t> row, Status no_space);
  // Process `key`'s row is stored: the attempt, while current, learns it, and the process's exit,
  // if seen, is recorded in it.
  asio::awaitable<void> TakeRow(ProcessKey key, std::uint64_t attempt, std::int64_t row);
  // Records process `key`'s exit (`at`: when): in its row, or, while that row is being stored,
  // once it is.
  asio::awaitable<void> RecordProcessExit(ProcessKey key, std::int64_t row, ProcessExit exit,
                                          double at);
  // The exit of process `rank` (at `exited_at`), whose replica the attempt machine restarts
  // alone: the replica's other partitions are stopped, and once all have exited, new ones of the
  // same attempt take their places (one restart, an event naming the first exit). False when the
  // replacement is abandoned (the job failed, was cancelled, or the daemon stops meanwhile): the
  // caller then handles the exit as any other.
  asio::awaitable<bool> ReplaceReplica(std::int64_t id, std::uint64_t attempt, int rank,
                                       double exited_at);
  // Ends the replacement of the replica of `partitions`, all of whose processes have exited,
  // `rank` last, after `respawned` of them had started again.
  void GiveUpReplacing(Job& job, const std::vector<int>& partitions, int rank, int respawned);
  // The admission of a process that replaced one of a running attempt: once every partition of
  // its replica has come (within cluster.timeout_seconds), its part of the newest checkpoint and
  // the current addresses.
  asio::awaitable<Result<Admission>> AdmitRestarted(std::int64_t id, std::uint64_t attempt,
                                                    int rank);
  // An elastic job's replica `rank`, admitted after the rendezvous, exited `how` (not well): it
  // leaves the membership, and the others regroup without it (waiting for replacements when
  // fewer than cluster.min_workers remain) unless too few can. Returns whether it is to be
  // replaced (while restarts last): not when the others are cluster.workers still.
  bool LoseElasticReplica(Job& job, int rank, const std::string& how);
  // Carries out what the job's RegroupRound answered: events, kills, the answer to the round's
  // askers, notices, the next round's deadline, or the attempt's failure.
  void ApplyRegroup(Job& job, RegroupStep step);
  // A member of the elastic job said it finished training: the replacements not yet members are
  // stopped, and carried on without.
  void FinishElastic(Job& job);
  // The round of `epoch` of the attempt, if still open after cluster.timeout_seconds, ends.
  asio::awaitable<void> ExpireRegroup(std::int64_t id, std::uint64_t attempt, int epoch);
  // Records `events` as the job's (its log, and its events in the store, each through the
  // job's queue: StoreEvent); the last becomes its reason (e.g. the membership an elastic job
  // trains in now). They are stored in the order of the calls, so a loss noted before a join
  // never becomes the reason after it.
  void NoteEvents(std::int64_t id, std::vector<std::string> events);
  // SIGTERM (then SIGKILL after `grace`) to every live process of the job.
  void StopProcesses(Job& job, std::chrono::milliseconds grace);
  // What process `rank` is admitted with: the common admission and its partition's part of the
  // checkpoint.
  Admission AdmissionFor(const Job& job, int rank) const;
  // Stores `checkpoint` (taken from) of attempt `attempt`, sent by `rank`; a failure fails the
  // attempt.
  asio::awaitable<Status> SaveCheckpoint(std::int64_t id, std::uint64_t attempt, int rank,
                                         int keep, store::CheckpointData& checkpoint);
  // Builds a Job from a stored record, or says why it cannot run.
  asio::awaitable<Result<std::unique_ptr<Job>>> LoadJob(const store::JobRecord& record);
  asio::awaitable<void> Finish(std::int64_t id, store::JobState state, const std::string& reason);
  // A record of a job's life as it happened, until the store has it: a state change (`to`), or
  // an event that leaves the state as it is (no `to`: Store::NoteEvent, or NoteReason where
  // `sets_reason`).
  struct JobEvent {
    std::optional<store::JobState> to;
    std::string reason;
    double at = 0;                 // when it happened, in seconds since the epoch
    std::function<void()> stored;  // called once it is stored (optional)
    bool sets_reason = false;
  };
  struct StoredEvents {
    Status first;     // the first event's result (OK while it waits for space)
    Status no_space;  // not OK: an event waits for space, and every later one with it
  };
  // Stores the job's move to `to` after every earlier record of the job (state changes and
  // events). OK once stored, and also when the disk is full: the change then waits, with any
  // later one, and is tried again (kStoreRetryFirst) until stored. An error: the store refused
  // it (the lifecycle).
  asio::awaitable<Status> StoreState(std::int64_t id, store::JobState to, std::string reason,
                                     std::function<void()> stored = {});
  // Stores an event of the job that leaves its state as it is (`sets_reason`: it becomes the
  // job's reason too), in the same order and way as StoreState; the store's refusal goes to the
  // daemon's log.
  asio::awaitable<void> StoreEvent(std::int64_t id, std::string event, bool sets_reason);
  // Queues `event` after the job's earlier records; true when the queue was empty, and the
  // caller is to store it (StoreQueue).
  bool Queue(std::int64_t id, JobEvent event);
  // Stores the job's queue in order, leaving what a full disk refuses to StoreEventsLater; the
  // first event's result.
  asio::awaitable<Status> StoreQueue(std::int64_t id);
  // StoreQueue, its refusal to the daemon's log.
  asio::awaitable<void> StoreQueueWarning(std::int64_t id);
  // Stores the job's queued events in order, until none is left or the disk is full.
  asio::awaitable<StoredEvents> StoreQueuedEvents(std::int64_t id);
  asio::awaitable<void> StoreEventsLater(std::int64_t id, Status no_space);
  // Records that the process in worker row `row` ended (`at`: when); a full disk's failure is
  // tried again later.
  asio::awaitable<void> RecordExit(std::int64_t row, ProcessExit exit, double at);
  asio::awaitable<void> RecordExitLater(std::int64_t row, std::function<Status()> write,
                                        Status no_space);
  // Waits `wait` before another try at a write the disk had no room for, and doubles it (up to
  // kStoreRetryMost); false once the daemon is stopping.
  asio::awaitable<bool> AwaitRetry(std::chrono::milliseconds& wait);
  // Says `no_space` (a write's failure for a full disk) in the daemon's log and runs `write` on
  // the pool again at AwaitRetry's intervals while it fails the same way: its first other
  // result, or `no_space` once the daemon is stopping.
  asio::awaitable<Status> RetryUntilStored(const std::function<Status()>& write, Status no_space);
  void Warn(std::string_view message) const;
  // Where the job's processes would run now with `workers` replicas (and its cores on this host,
  // set on the job).
  Placed Place(Job& job, int workers) const;
  // Where a waiting job starts, given `free_cores`: with all its replicas, or an elastic job with
  // the most that fit (at least cluster.min_workers); sets job.placed_workers and job.cores.
  Placed PlaceToStart(Job& job, int free_cores) const;
  // A running elastic job with fewer replicas started than cluster.max_workers (workers unless
  // set above; elastic_growth.cc): starts as many of the others as the free cores (and its
  // owner's share in `usage`, charged) allow, each admitted as a joiner that enters the ring at a
  // step boundary.
  void GrowElastic(Job& job, UsageByUser& usage);
  // Whether the running attempt of elastic job `job` may still start replicas (it has ranks never
  // started, and has not failed, finished, been cancelled or ended); its rendezvous may be under
  // way still (machine.ready() says when joiners are admitted).
  bool MayStillGrow(const Job& job) const;
  // Starts rank `rank` of `job` (never started in this attempt) on `node` as a joiner, charged
  // as placed; appends the event ("started worker 3 " + how + ": it joins ...", or why it could
  // not start) to `events`. False when it could not start.
  bool StartJoiner(Job& job, int rank, const std::string& node, const std::string& how,
                   std::vector<std::string>& events);
  // An elastic Slurm job's growth (slurm_growth.cc): while the attempt may still grow, asks Slurm
  // for one more replica at a time and starts each granted one as a joiner.
  asio::awaitable<void> GrowOnSlurm(std::int64_t id, std::uint64_t attempt);
  // Elastic on Slurm: replica `rank`, lost and not replaced, gives the allocation of its own (a
  // grown one) back to Slurm at once, noting it as an event; one in the attempt's allocation keeps
  // its cores there until the attempt ends (Slurm cannot shrink an allocation by a task).
  asio::awaitable<void> ReleaseSlurmReplica(std::int64_t id, std::uint64_t attempt, int rank);
  // Slurm (slurm_attempt.cc). A job placed by Slurm takes no cores here; it needs this daemon's
  // TCP listener, which its tasks connect back to.
  Placed PlaceOnSlurm(Job& job) const;
  // Asks Slurm for the attempt's allocation (after cancelling any its predecessor left) and
  // returns once it is granted, or refused, or its salloc was stopped (cancel, shutdown).
  asio::awaitable<Status> AllocateOnSlurm(std::int64_t id, std::uint64_t attempt);
  // Notes Slurm's grant of `allocation` to job `id` as an event naming its nodes and, for an
  // elastic job's further replica, its rank `worker` (store::SlurmGrantReason, which `status`
  // reads back).
  asio::awaitable<void> NoteSlurmGrant(std::int64_t id, Owner owner, std::int64_t allocation,
                                       std::optional<int> worker = std::nullopt);
  // The attempt of a Slurm job has ended: names Slurm's part in its failure (time limit,
  // preemption, a lost node) and cancels its allocations (and stops its growth's salloc).
  asio::awaitable<void> EndSlurmAttempt(std::int64_t id, std::uint64_t attempt);
  // A Slurm command (argv[0] looked up on PATH), each output line also told to `on_line`, and
  // `on_start` told its pid.
  struct SlurmCommand {
    std::vector<std::string> argv;
    std::function<void(std::string_view line)> on_line;
    std::function<void(pid_t)> on_start;
  };
  // Runs `command` as `owner`: its output lines, or an error when it cannot start or fails.
  asio::awaitable<Result<std::vector<std::string>>> RunSlurmCommand(Owner owner,
                                                                    SlurmCommand command);
  // Cancels Slurm job `allocation` as `owner` (scancel).
  asio::awaitable<void> CancelSlurmJob(Owner owner, std::string allocation);
  // How process `p` of a Slurm job starts: its stand-in (`dtraind slurm-task`), as the owner.
  Result<Launch> SlurmTaskLaunch(const Job& job, const Process& p) const;

  // Ends a job whose placement can never succeed, then schedules the others.
  asio::awaitable<void> FailUnplaceable(std::int64_t id, std::string why);
  void Schedule();
  // Schedules again in a moment: a job waits for a peer that may come up (no event says so).
  asio::awaitable<void> ScheduleLater();
  int CoresInUse() const;

  asio::io_context& io_;
  asio::thread_pool& pool_;
  store::Store& store_;
  Supervisor& supervisor_;
  ManagerSettings settings_;
  ProcessLauncher launcher_{settings_, supervisor_};
  std::map<std::int64_t, std::unique_ptr<Job>> jobs_;  // active: queued .. recovering
  // [limits] log_quota_per_user: per uid, charged with what the store held of that user's logs
  // when the user's first attempt since the daemon started (or reloaded) began.
  std::map<uid_t, LogQuota> user_logs_;
  std::set<std::int64_t> changing_;  // ended jobs being resumed or removed: one change at a time
  bool shutting_down_ = false;
  bool schedule_later_ = false;  // ScheduleLater is pending
  std::function<void(std::int64_t id)> on_end_;  // SetJobEndSink's
  // Each job's state changes and events not stored yet, oldest first (Queue); absent when none.
  std::map<std::int64_t, std::deque<JobEvent>> unstored_events_;
  // Processes whose row is being stored (RecordStart), with their exit once seen.
  std::map<ProcessKey, std::optional<ExitSeen>> unrecorded_starts_;
};

}  // namespace dtrain::server
