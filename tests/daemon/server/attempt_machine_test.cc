// The daemon's failure and restart policy (daemon/server/attempt_machine.h), without processes:
// events in, decisions out.
#include "daemon/server/attempt_machine.h"

#include <signal.h>

#include <boost/test/unit_test.hpp>
#include <string>
#include <vector>

#include "config/job.h"

namespace dtrain::server {
namespace attempt_machine_test {

constexpr ProcessExit kKilled{-1, SIGKILL};
constexpr ProcessExit kStatus1{1, 0};
constexpr ProcessExit kClean{0, 0};
constexpr ProcessExit kAskedToStop{130, 0};

bool Has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

config::JobConfig Job(config::ClusterMode mode, int workers, int servers = 1) {
  config::JobConfig job;
  job.cluster.mode = mode;
  job.cluster.workers = workers;
  job.cluster.servers = servers;
  return job;
}

// An attempt whose processes all started (and, when `ready`, met at the rendezvous).
AttemptMachine Started(const config::JobConfig& job, int default_max_restarts = 3, int restarts = 0,
                       bool ready = true) {
  AttemptMachine m(7, RestartPolicyFor(job, default_max_restarts), restarts);
  m.Begin(job.cluster.Processes());
  for (int rank = 0; rank < job.cluster.Processes(); ++rank) m.Spawned(rank);
  if (ready) m.Ready();
  return m;
}

// Process `rank` ends as `exit` and is counted at once (no restart alone, no blame wait).
ExitCount ExitNow(AttemptMachine& m, int rank, ProcessExit exit) {
  m.Exited(rank, exit);
  BOOST_TEST_REQUIRE(!m.RestartsAlone(rank));
  return m.CountExit(rank);
}

// Every process still live exits as `exit`; returns the decision of the last.
Outcome EndAll(AttemptMachine& m, ProcessExit exit) {
  ExitCount last;
  for (int rank = 0; !last.last; ++rank) {
    if (!m.process(rank).exited) last = ExitNow(m, rank, exit);
  }
  return m.Decide();
}

BOOST_AUTO_TEST_SUITE(restart_policy)

BOOST_AUTO_TEST_CASE(each_mode_says_what_a_lost_process_costs) {
  const RestartPolicy sync = RestartPolicyFor(Job(config::ClusterMode::kSync, 2), 3);
  BOOST_TEST((sync.on_loss == std::vector<config::LostProcess>{config::LostProcess::kRestartAll,
                                                               config::LostProcess::kRestartAll}));
  // Async: replicas alone, their shards with the whole job.
  const RestartPolicy async = RestartPolicyFor(Job(config::ClusterMode::kAsync, 2, 1), 3);
  BOOST_TEST((async.on_loss == std::vector<config::LostProcess>{config::LostProcess::kRestartAlone,
                                                                config::LostProcess::kRestartAlone,
                                                                config::LostProcess::kRestartAll}));
  // A sparse model's shards take no worker back.
  config::JobConfig sparse = Job(config::ClusterMode::kAsync, 2, 1);
  sparse.data.sparse = true;
  BOOST_TEST((RestartPolicyFor(sparse, 3).on_loss ==
              std::vector<config::LostProcess>(3, config::LostProcess::kRestartAll)));
  // Sandblaster: the job goes on without a worker, not without a shard or its coordinator.
  const RestartPolicy sandblaster =
      RestartPolicyFor(Job(config::ClusterMode::kSandblaster, 2, 1), 3);
  BOOST_TEST((sandblaster.on_loss ==
              std::vector<config::LostProcess>{
                  config::LostProcess::kCarryOn, config::LostProcess::kCarryOn,
                  config::LostProcess::kRestartAll, config::LostProcess::kRestartAll}));
  BOOST_TEST(sandblaster.lead_rank == 3);  // the coordinator
}

BOOST_AUTO_TEST_CASE(the_jobs_max_restarts_wins_over_the_daemons_default) {
  config::JobConfig job = Job(config::ClusterMode::kSync, 2);
  BOOST_TEST(RestartPolicyFor(job, 3).max_restarts == 3);
  job.max_restarts = 0;
  BOOST_TEST(RestartPolicyFor(job, 3).max_restarts == 0);
  job.max_restarts = 5;
  BOOST_TEST(RestartPolicyFor(job, 3).max_restarts == 5);
}

BOOST_AUTO_TEST_SUITE_END()

BOOST_AUTO_TEST_SUITE(attempt_machine)

BOOST_AUTO_TEST_CASE(every_process_completing_succeeds_with_the_leads_steps) {
  AttemptMachine m = Started(Job(config::ClusterMode::kSync, 2));
  BOOST_TEST(m.Done(0, worker::WorkerStop::kCompleted, 40, "", "").empty());
  BOOST_TEST(m.Done(1, worker::WorkerStop::kCompleted, 40, "", "").empty());
  const Outcome o = EndAll(m, kClean);
  BOOST_TEST((o.kind == Outcome::Kind::kSucceeded));
  BOOST_TEST(o.reason == "completed 40 steps");
}

BOOST_AUTO_TEST_CASE(the_leads_own_reason_is_the_jobs) {
  AttemptMachine m = Started(Job(config::ClusterMode::kSingle, 1));
  m.Done(0, worker::WorkerStop::kCompleted, 37, "converged after 37 iterations", "");
  BOOST_TEST(EndAll(m, kClean).reason == "converged after 37 iterations");
}

BOOST_AUTO_TEST_CASE(a_clean_exit_without_saying_done_fails_the_attempt) {
  AttemptMachine m = Started(Job(config::ClusterMode::kSingle, 1), 0);
  BOOST_TEST((ExitNow(m, 0, kClean).loss == ExitCount::Loss::kFailsAttempt));
}

BOOST_AUTO_TEST_CASE(a_replica_reaching_the_target_stops_the_others_whose_stop_ends_well) {
  AttemptMachine m = Started(Job(config::ClusterMode::kAsync, 3, 1));
  m.Done(2, worker::WorkerStop::kCompleted, 50, "", "");
  // The replicas still training are asked to stop; the finished one and the shard are not.
  BOOST_TEST((m.Done(1, worker::WorkerStop::kTarget, 30, "", "") == std::vector<int>{0}));
  BOOST_TEST(m.Done(1, worker::WorkerStop::kTarget, 30, "", "").empty());  // once only
  m.Done(0, worker::WorkerStop::kRequested, 31, "", "");
  m.Done(3, worker::WorkerStop::kCompleted, 0, "", "");
  m.Exited(0, kAskedToStop);
  BOOST_TEST(!m.RestartsAlone(0));
  BOOST_TEST((m.CountExit(0).loss == ExitCount::Loss::kNone));
  const Outcome o = EndAll(m, kClean);
  BOOST_TEST((o.kind == Outcome::Kind::kSucceeded));
  BOOST_TEST(o.reason == "reached target accuracy at step 30");
}

BOOST_AUTO_TEST_CASE(sync_a_killed_worker_fails_the_attempt_and_the_job_restarts_whole) {
  AttemptMachine m = Started(Job(config::ClusterMode::kSync, 3));
  m.Exited(1, kKilled);
  BOOST_TEST(!m.RestartsAlone(1));
  BOOST_TEST(!m.WaitsForBlame(1));  // a signal names itself
  const ExitCount counted = m.CountExit(1);
  BOOST_TEST((counted.loss == ExitCount::Loss::kFailsAttempt));
  BOOST_TEST(!counted.last);
  const FailVerdict verdict = m.Fail("worker rank 1 killed by signal SIGKILL", false);
  BOOST_TEST(verdict.first);
  BOOST_TEST(verdict.recovering.value_or("") ==
             "restart 1 of 3: worker rank 1 killed by signal SIGKILL; resuming from the newest "
             "checkpoint");
  BOOST_TEST((m.TakeStops() == std::vector<int>{0, 2}));  // the survivors
  BOOST_TEST(m.TakeStops().empty());
  BOOST_TEST(!m.Fail("worker rank 0 exited with status 1", false).first);  // the first stays
  const Outcome o = EndAll(m, kStatus1);
  BOOST_TEST((o.kind == Outcome::Kind::kRestart));
  BOOST_TEST(Has(o.reason, "restart 1 of 3: worker rank 1 killed by signal SIGKILL"));
  BOOST_TEST(o.pause.count() == 200);
  BOOST_TEST(m.restarts() == 1);
  // The next attempt starts clean, and pauses longer if it fails too.
  m.Begin(3);
  BOOST_TEST(m.failure().empty());
  BOOST_TEST(!m.ready());
  for (int rank = 0; rank < 3; ++rank) m.Spawned(rank);
  m.Fail("worker rank 0 killed by signal SIGSEGV", true);
  BOOST_TEST(EndAll(m, kKilled).pause.count() == 400);
}

BOOST_AUTO_TEST_CASE(a_failure_on_its_own_beside_live_peers_waits_for_the_blame) {
  AttemptMachine m = Started(Job(config::ClusterMode::kSync, 2));
  m.Exited(0, kStatus1);
  BOOST_TEST(m.WaitsForBlame(0));
  m.Fail("worker rank 1 killed by signal SIGKILL", false);
  BOOST_TEST(!m.WaitsForBlame(0));  // the cause is named already
}

BOOST_AUTO_TEST_CASE(once_max_restarts_are_spent_the_job_fails_saying_so) {
  AttemptMachine m = Started(Job(config::ClusterMode::kSync, 2), 3, 3);
  BOOST_TEST(!m.WillRestart());
  BOOST_TEST(!m.Fail("worker rank 0 killed by signal SIGKILL", false).recovering);
  const Outcome o = EndAll(m, kKilled);
  BOOST_TEST((o.kind == Outcome::Kind::kFailed));
  BOOST_TEST(o.reason ==
             "worker rank 0 killed by signal SIGKILL (see dtrain logs 7); gave up after 3 "
             "restarts");
  BOOST_TEST(m.restarts() == 3);
}

BOOST_AUTO_TEST_CASE(without_restarts_the_first_failure_fails_the_job) {
  AttemptMachine m = Started(Job(config::ClusterMode::kSingle, 1), 0);
  m.Fail("worker rank 0 exited with status 1", false);
  const Outcome o = EndAll(m, kStatus1);
  BOOST_TEST((o.kind == Outcome::Kind::kFailed));
  BOOST_TEST(o.reason == "worker rank 0 exited with status 1 (see dtrain logs 7)");
}

BOOST_AUTO_TEST_CASE(a_process_that_cannot_succeed_anywhere_is_not_restarted) {
  for (const worker::WorkerStop stop :
       {worker::WorkerStop::kNoData, worker::WorkerStop::kOutOfMemory,
        worker::WorkerStop::kDiverged, worker::WorkerStop::kUnsupportedCpu}) {
    AttemptMachine m = Started(Job(config::ClusterMode::kSync, 2));
    m.Done(1, stop, 12, "", "worker rank 1: it cannot");
    BOOST_TEST(!m.WillRestart());
    m.Fail("worker rank 1 exited with status 1", false);
    const Outcome o = EndAll(m, kStatus1);
    BOOST_TEST((o.kind == Outcome::Kind::kFailed));
    BOOST_TEST(o.reason == "worker rank 1: it cannot (not restarted: it would fail the same way)");
  }
}

BOOST_AUTO_TEST_CASE(async_a_killed_replica_restarts_alone_while_the_others_go_on) {
  AttemptMachine m = Started(Job(config::ClusterMode::kAsync, 2, 1));
  m.Exited(1, kKilled);
  BOOST_TEST(m.RestartsAlone(1));
  m.BeginReplacing({1});
  BOOST_TEST(m.TakeKills({1}).empty());  // it is gone already
  BOOST_TEST(m.MayReplace());
  m.Respawned(1);
  m.ReplicaRestarted();
  BOOST_TEST(m.restarts() == 1);
  BOOST_TEST(m.live() == 3);  // its exit was not counted: the new one takes its place
  BOOST_TEST(m.failure().empty());
  BOOST_TEST(!m.process(1).exited);
  BOOST_TEST(!m.process(1).replacing);
}

BOOST_AUTO_TEST_CASE(async_a_replicas_other_partitions_are_killed_and_its_exits_not_counted) {
  config::JobConfig job = Job(config::ClusterMode::kAsync, 2, 1);
  job.cluster.model_parallel = 2;  // replica 1: ranks 2, 3
  AttemptMachine m = Started(job);
  m.Exited(2, kKilled);
  BOOST_TEST(m.RestartsAlone(2));
  m.BeginReplacing({2, 3});
  BOOST_TEST((m.TakeKills({2, 3}) == std::vector<int>{3}));
  BOOST_TEST(m.process(3).stop_sent);
  m.Exited(3, kKilled);
  BOOST_TEST(m.RestartsAlone(3));  // part of the replacement, whatever it says
  // Cancelled meanwhile: the replacement is given up; one exit is counted as any other.
  m.Cancel(1000);
  BOOST_TEST(!m.MayReplace());
  m.GiveUpReplacing({2, 3}, 0);
  BOOST_TEST(!m.RestartsAlone(3));
  BOOST_TEST(m.live() == 5);
  BOOST_TEST((m.CountExit(3).loss == ExitCount::Loss::kNone));
  BOOST_TEST(m.live() == 4);
  BOOST_TEST((EndAll(m, kAskedToStop).kind == Outcome::Kind::kCancelled));
  BOOST_TEST(m.restarts() == 0);
}

BOOST_AUTO_TEST_CASE(async_a_replica_that_cannot_start_again_gives_up_with_the_started_live) {
  config::JobConfig job = Job(config::ClusterMode::kAsync, 2, 1);
  job.cluster.model_parallel = 2;
  AttemptMachine m = Started(job);
  m.BeginReplacing({2, 3});
  m.Exited(2, kKilled);
  m.Exited(3, kKilled);
  m.Respawned(2);  // partition 1 then could not start
  m.GiveUpReplacing({2, 3}, 1);
  BOOST_TEST(m.live() == 6);  // the 4 others, the new partition 0, and the exit to count
  BOOST_TEST((m.CountExit(3).loss == ExitCount::Loss::kFailsAttempt));
  BOOST_TEST(m.live() == 5);
}

BOOST_AUTO_TEST_CASE(async_no_restart_alone_before_the_rendezvous_nor_for_shards_nor_budget) {
  // Before every process has said hello: the attempt restarts whole.
  AttemptMachine starting = Started(Job(config::ClusterMode::kAsync, 2, 1), 3, 0, false);
  starting.Exited(0, kKilled);
  BOOST_TEST(!starting.RestartsAlone(0));
  // A shard restarts the whole job.
  AttemptMachine shard = Started(Job(config::ClusterMode::kAsync, 2, 1));
  shard.Exited(2, kKilled);
  BOOST_TEST(!shard.RestartsAlone(2));
  BOOST_TEST((shard.CountExit(2).loss == ExitCount::Loss::kFailsAttempt));
  // No restarts left: the replica's loss fails the job.
  AttemptMachine spent = Started(Job(config::ClusterMode::kAsync, 2, 1), 3, 3);
  spent.Exited(0, kKilled);
  BOOST_TEST(!spent.RestartsAlone(0));
  // After the attempt failed, or a replica finished or reached the target.
  AttemptMachine failed = Started(Job(config::ClusterMode::kAsync, 2, 1));
  failed.Fail("shard 0 killed by signal SIGKILL", false);
  failed.Exited(0, kKilled);
  BOOST_TEST(!failed.RestartsAlone(0));
  AttemptMachine done = Started(Job(config::ClusterMode::kAsync, 2, 1));
  done.Done(0, worker::WorkerStop::kCompleted, 10, "", "");
  done.Exited(0, kStatus1);
  BOOST_TEST(!done.RestartsAlone(0));
  // A sparse model's.
  config::JobConfig sparse = Job(config::ClusterMode::kAsync, 2, 1);
  sparse.data.sparse = true;
  AttemptMachine sparse_job = Started(sparse);
  sparse_job.Exited(0, kKilled);
  BOOST_TEST(!sparse_job.RestartsAlone(0));
}

BOOST_AUTO_TEST_CASE(sandblaster_carries_on_without_a_lost_worker) {
  AttemptMachine m = Started(Job(config::ClusterMode::kSandblaster, 2, 1));
  m.Exited(0, kKilled);
  BOOST_TEST(!m.RestartsAlone(0));
  BOOST_TEST((m.CountExit(0).loss == ExitCount::Loss::kCarryOn));
  BOOST_TEST(m.failure().empty());
  // A silent one is killed, and its exit says nothing more.
  BOOST_TEST((m.Silenced(1) == config::LostProcess::kCarryOn));
  BOOST_TEST((ExitNow(m, 1, kKilled).loss == ExitCount::Loss::kNone));
  m.Done(2, worker::WorkerStop::kCompleted, 0, "", "");
  m.Done(3, worker::WorkerStop::kCompleted, 9, "converged (gradient tolerance) after 9 iterations",
         "");
  const Outcome o = EndAll(m, kClean);
  BOOST_TEST((o.kind == Outcome::Kind::kSucceeded));
  BOOST_TEST(o.reason == "converged (gradient tolerance) after 9 iterations");
  BOOST_TEST(m.restarts() == 0);
}

// An elastic sync job (min_workers 2 of 3) whose lead, rank 0, is lost with no restart left to
// replace it: the others carry on and the job succeeds on their ends.
BOOST_AUTO_TEST_CASE(elastic_sync_carries_on_without_a_lost_replica_its_lead_included) {
  config::JobConfig job = Job(config::ClusterMode::kSync, 3);
  job.cluster.min_workers = 2;
  AttemptMachine m = Started(job, 0);
  m.Exited(0, kKilled);
  BOOST_TEST(!m.RestartsAlone(0));  // no restart left
  m.CarriedOn(0);
  BOOST_TEST((m.CountExit(0).loss == ExitCount::Loss::kCarryOn));
  BOOST_TEST(m.failure().empty());
  m.Done(1, worker::WorkerStop::kCompleted, 80, "", "");
  m.Done(2, worker::WorkerStop::kCompleted, 80, "", "");
  const Outcome o = EndAll(m, kClean);
  BOOST_TEST((o.kind == Outcome::Kind::kSucceeded));
  BOOST_TEST(o.reason == "completed 80 steps");
}

BOOST_AUTO_TEST_CASE(elastic_sync_a_lost_replica_restarts_alone_while_restarts_last) {
  config::JobConfig job = Job(config::ClusterMode::kSync, 3);
  job.cluster.min_workers = 2;
  AttemptMachine m = Started(job, 1);
  m.Exited(2, kKilled);
  m.CarriedOn(2);
  BOOST_TEST(m.RestartsAlone(2));
  m.BeginReplacing({2});
  m.Respawned(2);
  m.ReplicaRestarted();
  BOOST_TEST(!m.process(2).carried_on);  // the replacement is a member like any other
  BOOST_TEST(m.live() == 3);
  // A loss not carried on (the regroup failed) fails the attempt as ever.
  m.Exited(1, kStatus1);
  BOOST_TEST(!m.RestartsAlone(1));  // the one restart is spent
  BOOST_TEST((m.CountExit(1).loss == ExitCount::Loss::kFailsAttempt));
}

// An elastic job started with 2 of its 3 replicas (too few cores): it may succeed without the
// third; once added, the third is live and must end well like the others.
BOOST_AUTO_TEST_CASE(elastic_sync_a_replica_not_started_is_not_needed_until_added) {
  config::JobConfig job = Job(config::ClusterMode::kSync, 3);
  job.cluster.min_workers = 2;
  for (const bool added : {false, true}) {
    AttemptMachine m(7, RestartPolicyFor(job, 0), 0);
    m.Begin(3);
    m.Spawned(0);
    m.Spawned(1);
    m.Unstarted(2);
    m.Ready();
    BOOST_TEST(m.live() == 2);
    BOOST_TEST(m.TakeStops() == std::vector<int>({0, 1}));  // what a cancel would stop
    if (added) {
      m.Added(2);
      BOOST_TEST(m.live() == 3);
      BOOST_TEST(!m.process(2).carried_on);
    }
    m.Done(0, worker::WorkerStop::kCompleted, 80, "", "");
    m.Done(1, worker::WorkerStop::kCompleted, 80, "", "");
    ExitNow(m, 0, kClean);
    ExitCount last = ExitNow(m, 1, kClean);
    if (added) last = ExitNow(m, 2, kStatus1);  // it did not finish: the job did not either
    BOOST_TEST(last.last);
    BOOST_TEST(((m.Decide().kind == Outcome::Kind::kSucceeded) == !added));
  }
}

BOOST_AUTO_TEST_CASE(sandblaster_a_lost_shard_or_coordinator_restarts_the_job) {
  AttemptMachine m = Started(Job(config::ClusterMode::kSandblaster, 2, 1));
  BOOST_TEST((m.Silenced(3) == config::LostProcess::kRestartAll));
  BOOST_TEST((ExitNow(m, 2, kKilled).loss == ExitCount::Loss::kFailsAttempt));
}

BOOST_AUTO_TEST_CASE(a_cancel_ends_the_job_cancelled_in_every_state) {
  // Starting (before the rendezvous), running, and after a failure that would restart it.
  for (int when = 0; when < 3; ++when) {
    AttemptMachine m = Started(Job(config::ClusterMode::kSync, 2), 3, 0, when != 0);
    if (when == 2) m.Fail("worker rank 0 killed by signal SIGKILL", false);
    m.Cancel(1000);
    BOOST_TEST((m.TakeStops().size() == 2u));
    // The stopped processes' exits fail nothing.
    BOOST_TEST((ExitNow(m, 0, kAskedToStop).loss == ExitCount::Loss::kNone));
    BOOST_TEST(!m.Fail("worker rank 1 exited with status 1", false).recovering);
    const Outcome o = EndAll(m, kKilled);
    BOOST_TEST((o.kind == Outcome::Kind::kCancelled));
    BOOST_TEST(o.reason == "cancelled by uid 1000");
    BOOST_TEST(m.restarts() == 0);
  }
  // Even a job whose every process completed meanwhile.
  AttemptMachine m = Started(Job(config::ClusterMode::kSingle, 1));
  m.Cancel(0);
  m.Done(0, worker::WorkerStop::kCompleted, 5, "", "");
  BOOST_TEST((EndAll(m, kClean).kind == Outcome::Kind::kCancelled));
}

BOOST_AUTO_TEST_CASE(a_shutdown_leaves_the_job_for_the_next_start) {
  AttemptMachine m = Started(Job(config::ClusterMode::kAsync, 2, 1));
  m.Shutdown();
  m.Exited(0, kKilled);
  BOOST_TEST(!m.RestartsAlone(0));  // nothing restarts while the daemon stops
  BOOST_TEST((m.CountExit(0).loss == ExitCount::Loss::kNone));
  BOOST_TEST(!m.Fail("shard 0 exited with status 1", false).recovering);
  const Outcome o = EndAll(m, kStatus1);
  BOOST_TEST((o.kind == Outcome::Kind::kLeftForNextStart));
  BOOST_TEST(m.restarts() == 0);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace attempt_machine_test
}  // namespace dtrain::server
