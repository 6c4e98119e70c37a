// AttemptMachine: what happens to a job's attempt as its processes start, report and exit — the
// failure and restart policy of the daemon, as a pure, synchronous type. It takes events
// (spawned, ready, done, exit, silence, failure, cancel, shutdown) and answers with what to do
// (which ranks to stop, whether an exit fails the attempt or is carried on without, whether a
// replica restarts alone, and once the last process has gone: succeed, cancel, leave for the next
// daemon, restart or fail, with the job's reason). It starts nothing, waits for nothing and
// stores nothing: JobManager (job_manager.h) turns its answers into processes, timers and store
// writes.
//
//   AttemptMachine m(job_id, RestartPolicyFor(job.config, settings.max_restarts), restarts);
//   m.Begin(processes);  m.Spawned(rank) ...;  m.Ready();
//   m.Exited(rank, exit);  if (m.RestartsAlone(rank)) ...;
//   ExitCount counted = m.CountExit(rank);  if (counted.last) Outcome o = m.Decide();
//
// Invariants: live() counts the processes of the attempt that started and have not been counted
// out; failure() is the attempt's first failure and never changes once set; restarts() only
// grows, by one per restart (whole or alone), and a restart happens only while restarts() <
// max_restarts and no process said the job cannot succeed anywhere (hopeless).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/job.h"
#include "config/mode_traits.h"
#include "daemon/server/supervisor.h"
#include "daemon/worker/worker_stop.h"

namespace dtrain::server {

// The policy an attempt is judged by, computed from the job's configuration only.
struct RestartPolicy {
  std::vector<config::LostProcess>
      on_loss;        // by rank: what its loss (an exit that is not a good end, or silence) costs
  int lead_rank = 0;  // the process whose end is the job's
  int trainers = 0;   // ranks 0 .. trainers - 1 train (replicas, or their partitions)
  int max_restarts = 0;
};

// The one place that reads a job's configuration for its restart policy: `default_max_restarts`
// for a job whose file does not say.
RestartPolicy RestartPolicyFor(const config::JobConfig& job, int default_max_restarts);

// What the daemon knows of one process of the attempt.
struct ProcessState {
  bool started = false;
  std::optional<worker::WorkerStop> done_stop;  // what it said when it finished (nullopt: not yet,
                                                // or a name this daemon does not know)
  std::int64_t steps = 0;
  std::string done_reason;  // how its run ended, in its words (may be empty)
  bool exited = false;
  ProcessExit exit;         // once exited
  bool ended_well = false;  // once exited: it finished in a way that lets the job succeed
  bool stop_sent = false;   // asked (or forced) to stop
  bool replacing = false;   // its replica is being started again alone; its exit fails nothing
  bool carried_on = false;  // an elastic job's replica lost while the others regroup without it
};

// What to do with an exit once it is counted.
struct ExitCount {
  enum class Loss { kNone, kCarryOn, kFailsAttempt };
  Loss loss = Loss::kNone;
  bool last = false;  // the attempt's last process: Decide now
};

// How the attempt ends, decided once its last process has exited.
struct Outcome {
  enum class Kind { kSucceeded, kCancelled, kLeftForNextStart, kRestart, kFailed };
  Kind kind = Kind::kFailed;
  std::string reason;
  std::chrono::milliseconds pause{0};  // kRestart: how long to wait before the next attempt
};

// What a first failure asks for (a later one changes nothing).
struct FailVerdict {
  bool first = false;
  std::optional<std::string> recovering;  // the job is recovering from now on, for this reason
};

class AttemptMachine {
 public:
  AttemptMachine(std::int64_t job_id, RestartPolicy policy, int restarts);

  // A new attempt of `processes` processes, none started.
  void Begin(int processes);
  void Spawned(int rank);
  // Every process has said hello: the attempt runs.
  void Ready() { ready_ = true; }
  void Cancel(uid_t by);
  void Shutdown() { shutting_down_ = true; }

  // The attempt's first failure, `why`; `already_recovering`: the job is marked so already.
  FailVerdict Fail(const std::string& why, bool already_recovering);
  // What caused the attempt's failure, learnt after it (Slurm preempted the job): said first.
  void NameCause(const std::string& cause) { failure_ = cause + ": " + failure_; }
  // Process `rank` finished with `stop` (nullopt: a name this daemon does not know) after `steps`;
  // `who_error` names it and says what went wrong, if anything. Returns the ranks to ask to stop
  // now (a replica reached the target: the other replicas stop too).
  std::vector<int> Done(int rank, std::optional<worker::WorkerStop> stop, std::int64_t steps,
                        const std::string& reason, const std::string& who_error);
  // The started processes that have not exited and were not asked to stop yet, now marked asked.
  std::vector<int> TakeStops();
  // Process `rank` is killed (it fell silent); its loss rule says what the job does next.
  config::LostProcess Silenced(int rank);

  // Process `rank` exited; then ask whether its replica restarts alone, whether its exit waits
  // for a peer's death to be named first, and count it.
  void Exited(int rank, ProcessExit exit);
  // The exited process `rank`, an elastic job's replica, is lost without failing the attempt:
  // the others regroup without it (daemon/server/regroup_round.h); its count carries on, and the
  // job may succeed without it.
  void CarriedOn(int rank) { processes_[Index(rank)].carried_on = true; }
  // An elastic job's replica `rank` is not started with the attempt (too few cores for all):
  // the job may succeed without it. Added: it starts later, a fresh process, live from now.
  void Unstarted(int rank) { processes_[Index(rank)].carried_on = true; }
  void Added(int rank);
  bool RestartsAlone(int rank) const;
  bool WaitsForBlame(int rank) const;
  ExitCount CountExit(int rank);
  // After the last exit: how the attempt ends (a restart is counted here).
  Outcome Decide();

  // Restarting a replica alone (its `ranks`): they are marked as being replaced, and those still
  // running are to be killed (TakeKills). Their exits are not counted; once all have exited,
  // MayReplace says whether new ones start (Respawned each, then ReplicaRestarted) or the job
  // ends instead: GiveUpReplacing, after `respawned` of them had started again, leaves one exit
  // for the caller to count as usual.
  void BeginReplacing(const std::vector<int>& ranks);
  std::vector<int> TakeKills(const std::vector<int>& ranks);
  bool MayReplace() const;
  void Respawned(int rank);
  void ReplicaRestarted() { ++restarts_; }
  void GiveUpReplacing(const std::vector<int>& ranks, int respawned);

  const ProcessState& process(int rank) const { return processes_[Index(rank)]; }
  const std::string& failure() const { return failure_; }
  bool ready() const { return ready_; }
  bool cancel_requested() const { return cancel_requested_; }
  uid_t cancelled_by() const { return cancelled_by_; }
  bool shutting_down() const { return shutting_down_; }
  bool target_reached() const { return target_reached_; }
  int live() const { return live_; }
  int restarts() const { return restarts_; }
  int max_restarts() const { return policy_.max_restarts; }
  // Whether a failed attempt is followed by another: restarts left and nothing hopeless.
  bool WillRestart() const { return restarts_ < policy_.max_restarts && hopeless_.empty(); }
  // "restart N of M: <the attempt's failure>; resuming from the newest checkpoint".
  std::string RestartReason() const;

 private:
  static std::size_t Index(int rank) { return static_cast<std::size_t>(rank); }
  bool StoppedWell(const ProcessState& p) const;
  // The process whose end is the job's: the lead rank, unless that was carried on without, then
  // the first trainer that stopped well.
  const ProcessState& Lead() const;
  std::int64_t TargetStep() const;

  std::int64_t job_id_;
  RestartPolicy policy_;
  int restarts_;
  std::vector<ProcessState> processes_;
  int live_ = 0;
  std::string failure_;
  bool ready_ = false;
  bool cancel_requested_ = false;
  uid_t cancelled_by_ = 0;
  bool shutting_down_ = false;
  // A replica reached the target accuracy: a replica that stops because it was asked ends the
  // attempt well.
  bool target_reached_ = false;
  std::string hopeless_;  // why the job cannot succeed anywhere (no restart), naming the process
};

}  // namespace dtrain::server
