// Elastic synchronous jobs ([cluster] min_workers): a three-replica job loses a replica three
// times, each time the two survivors carry on in the same processes (their pids stay) on a ring of
// two, and the daemon's replacement joins them at a step boundary; then the daemon itself is
// killed and the job resumes from its checkpoint. Every replica records the rows each step took
// (DTRAIN_RECORD_ROWS) with the membership it trained in: per epoch, the steps' rows over the
// membership that completed each step are every id once, whatever the world was. A job that loses
// two replicas at once waits, below min_workers, for their replacements. Another starts with
// min_workers replicas where cores are short and grows as they free up. One of workers = 2 and
// max_workers = 3 grows beyond its workers and carries on without the extra replica once it is
// lost; one with max_workers but no min_workers waits for the cores of all its workers. On one
// parameter server and on two, the survivors of two losses regroup from the shards' state, in
// their processes, without a shard restarting, and every row is still taken once per epoch (on
// two, each shard's steps_undone metric counts the steps its log says it undid). An
// elastic local job (local SGD, average_every 4) loses a replica twice: the survivors keep their
// pids and roll back to their last average (the replacements join at such a step), and every row
// is still taken once per epoch; one whose averages are far apart (average_every 1000, beyond
// timeout_seconds) regroups within a step of a loss, told by the daemon.
#include <signal.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdint>
#include <sstream>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/temp_dir.h"
#include "core/data/click_synthetic.h"
#include "integration/daemon_fixture.h"
#include "integration/elastic_jobs.h"
#include "integration/recorded_rows.h"
#include "integration/stored_metrics.h"

namespace dtrain::testing {
namespace elastic_test {

using json = nlohmann::json;

constexpr int kWorkers = kElasticWorkers, kRows = 12000, kEpochs = 4;
constexpr int kGlobalBatch = kElasticGlobalBatch;
constexpr int kStepsPerEpoch = kRows / kGlobalBatch;  // 250
// The smaller jobs'.
constexpr int kFewRows = 4800, kFewSteps = kFewRows / kGlobalBatch;  // an epoch's: 100

BOOST_AUTO_TEST_SUITE(elastic, *boost::unit_test::label("long"))

BOOST_AUTO_TEST_CASE(survivors_carry_on_through_three_losses_and_every_row_is_taken_once) {
  RecordingDaemon daemon(kRows);
  DaemonFixture& d = daemon.d;
  const std::int64_t id = daemon.SubmitElastic("elastic", kEpochs, 8);

  LoseAndReplace(d, id, 1, 40, 0);
  LoseAndReplace(d, id, 0, kStepsPerEpoch + 40, 1);  // the replica that writes the checkpoints
  LoseAndReplace(d, id, 2, 2 * kStepsPerEpoch + 40, 2);
  BOOST_REQUIRE(d.WaitForStep(id, 3 * kStepsPerEpoch + 40)["state"] == "running");
  d.Stop(SIGKILL);
  d.Start();
  const TakenSteps steps = daemon.WaitForSuccessTakingEveryRowOnce(id, kEpochs, kStepsPerEpoch);
  BOOST_TEST(steps.smaller_worlds > 0, "no step was trained by fewer replicas");
}

// Local SGD: between averages the members' states differ, so each regroup (a loss, a join) rolls
// back to the last average, which the replacement joins at; the rows of the steps redone are taken
// again by the new membership, and still every id is taken once per epoch.
BOOST_AUTO_TEST_CASE(a_local_job_rolls_back_to_its_last_average_and_every_row_is_taken_once) {
  constexpr int kAverageEvery = 4;
  const RecordingDaemon daemon(kRows);
  const DaemonFixture& d = daemon.d;
  const std::int64_t id =
      daemon.SubmitElastic("elastic-local", kEpochs, 8, "",
                           "average_every = " + std::to_string(kAverageEvery) + "\n", "local");

  LoseAndReplace(d, id, 1, 40, 0);
  // The replica that writes the checkpoints.
  const json joined = LoseAndReplace(d, id, 0, kStepsPerEpoch + 40, 1);
  for (const json& e : joined["events"]) {
    const std::string reason = e["reason"].get<std::string>();
    const std::size_t at = reason.find(" joined at step ");
    if (at == std::string::npos) continue;
    const long step = std::stol(reason.substr(at + std::string(" joined at step ").size()));
    BOOST_TEST(step % kAverageEvery == 0, reason << ": not at an average");
  }
  const TakenSteps steps = daemon.WaitForSuccessTakingEveryRowOnce(id, kEpochs, kStepsPerEpoch);
  BOOST_TEST(steps.smaller_worlds > 0, "no step was trained by fewer replicas");
}

// Averages far apart (average_every 1000: only the run's last step) and a short timeout_seconds
// (2): a member touches its ring only at averages, so the survivors of a loss, and the members when
// the replacement is admitted, regroup because the daemon tells them to (regroup_now), within a
// step, not at their next average, long after the round's deadline would have taken them for lost.
// No average was taken yet, so the membership rolls back to the state it began with.
BOOST_AUTO_TEST_CASE(a_local_job_with_averages_far_apart_regroups_within_a_step_of_a_loss) {
  const RecordingDaemon daemon(kRows);
  const DaemonFixture& d = daemon.d;
  const std::int64_t id = daemon.SubmitElastic(
      "elastic-local-far", kEpochs, 8, "", "average_every = 1000\ntimeout_seconds = 2\n", "local");

  const json joined = LoseAndReplace(d, id, 1, 40, 0);
  BOOST_TEST(CountEvents(joined, "worker 1 joined at step 0: 3 of 3") == 1, joined.dump());
  daemon.WaitForSuccessTakingEveryRowOnce(id, kEpochs, kStepsPerEpoch);
}

// How many times shard `shard` of `servers` said in the job's log that it undid a step. A shard
// logs it on its stderr, which `dtrain logs` prints on its own stderr.
int UndoLines(const DaemonFixture& d, std::int64_t id, int shard, int servers) {
  const ProcessResult logs =
      RunProcess({EnvPath("DTRAIN_BIN"), "--socket", d.socket(), "logs", std::to_string(id)},
                 d.dir().Path(""));
  BOOST_REQUIRE_MESSAGE(logs.exit_code == 0, logs.err);
  const std::string name =
      "shard " + std::to_string(shard) + " of " + std::to_string(servers) + " [";
  int undone = 0;
  std::istringstream lines(logs.out + logs.err);
  for (std::string line; std::getline(lines, line);) {
    undone += line.find(name) != std::string::npos &&
              line.find(": undid its last step, back to step ") != std::string::npos;
  }
  return undone;
}

// Each shard's steps_undone is the steps its log says it undid: a loss that came between a
// member's pushes to the two shards shows as 1 or more, none as 0 (which of the kills landed so is
// chance). Polled until the metric (every second) and the log lines (as the daemon stores them)
// agree, or 30 s pass.
void RequireUndoneStepsReported(const DaemonFixture& d, std::int64_t id, int servers) {
  const auto agree = [&] {
    for (int k = 0; k < servers; ++k) {
      if (StoredMetric(d, id, "steps_undone", kWorkers + k).empty() ||
          LargestOf(d, id, "steps_undone", kWorkers + k) != UndoLines(d, id, k, servers)) {
        return false;
      }
    }
    return true;
  };
  for (int i = 0; i < 300 && !agree(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  for (int k = 0; k < servers; ++k) {
    const int logged = UndoLines(d, id, k, servers);
    BOOST_TEST_MESSAGE("shard " << k << " undid " << logged << " steps");
    BOOST_TEST(!StoredMetric(d, id, "steps_undone", kWorkers + k).empty(), "shard " << k);
    BOOST_TEST(LargestOf(d, id, "steps_undone", kWorkers + k) == logged,
               "shard " << k << ": steps_undone " << LargestOf(d, id, "steps_undone", kWorkers + k)
                        << ", logged " << logged << d.LogTail(id, 80));
  }
}

// On parameter servers (allreduce "ps", `servers` of them): each lost replica makes the shards
// answer the survivors' next requests with a regroup reply; they regroup in their processes with
// the shards' state after the last step they all saw (on several shards, a step the lost replica
// pushed to some shards only is undone there, and each shard's steps_undone says how often), and
// the replacement joins them, the shards serving on in their processes. A lost shard then restarts
// the attempt from the newest checkpoint. Every row is taken once per epoch by the steps'
// memberships throughout.
void SurvivorsCarryOnOnShards(int servers) {
  constexpr int kFewEpochs = 4;
  const RecordingDaemon daemon(kFewRows);
  const DaemonFixture& d = daemon.d;
  const std::int64_t id =
      daemon.SubmitElastic("elastic-ps", kFewEpochs, 8, "",
                           "allreduce = \"ps\"\nservers = " + std::to_string(servers) + "\n");
  const json started = d.WaitForStep(id, 20);
  std::vector<pid_t> shards;
  for (int k = 0; k < servers; ++k) {
    shards.push_back(RunningPid(started, kWorkers + k));
    BOOST_REQUIRE(shards.back() > 0);
  }
  LoseAndReplace(d, id, 1, 40, 0);
  LoseAndReplace(d, id, 0, kFewSteps + 40, 1);  // the member that writes the checkpoints
  // Checked with two epochs still to go, so that the job runs on while the counts are polled.
  if (servers > 1) {
    RequireUndoneStepsReported(d, id, servers);
  } else {  // one shard keeps no undo
    BOOST_TEST(StoredMetric(d, id, "steps_undone", kWorkers).empty());
  }
  const json replaced = d.WaitForStep(id, 2 * kFewSteps + 40);
  BOOST_REQUIRE_MESSAGE(replaced["state"] == "running", replaced.dump() << d.LogTail(id));
  for (int k = 0; k < servers; ++k) {
    BOOST_TEST(RunningPid(replaced, kWorkers + k) == shards[static_cast<std::size_t>(k)],
               "shard " << k << " was restarted for a replica");
  }
  BOOST_REQUIRE(::kill(shards.back(), SIGKILL) == 0);
  const TakenSteps steps = daemon.WaitForSuccessTakingEveryRowOnce(id, kFewEpochs, kFewSteps);
  BOOST_TEST(steps.smaller_worlds > 0, "no step was trained by fewer replicas");
  BOOST_TEST(CountEvents(d.Status(id), "resuming from the newest checkpoint") == 1);
}

BOOST_AUTO_TEST_CASE(on_a_parameter_server_survivors_carry_on_through_losses_and_every_row_once) {
  SurvivorsCarryOnOnShards(1);
}

BOOST_AUTO_TEST_CASE(
    on_two_parameter_servers_survivors_carry_on_through_losses_and_every_row_once) {
  SurvivorsCarryOnOnShards(2);
}

// Two replicas of three lost at once leave one, below min_workers 2: it waits in its process for
// the replacements (which may join one by one or together) instead of restarting from the
// checkpoint.
BOOST_AUTO_TEST_CASE(two_lost_at_once_the_survivor_waits_for_their_replacements) {
  constexpr int kFewEpochs = 2;
  const RecordingDaemon daemon(kFewRows);
  const DaemonFixture& d = daemon.d;
  const std::int64_t id = daemon.SubmitElastic("short", kFewEpochs, 8);
  const json job = d.WaitForStep(id, 40);
  BOOST_REQUIRE_MESSAGE(job["state"] == "running", job.dump() << d.LogTail(id));
  const pid_t survivor = RunningPid(job, 0);
  const pid_t one = RunningPid(job, 1), two = RunningPid(job, 2);
  BOOST_REQUIRE(::kill(one, SIGKILL) == 0);
  BOOST_REQUIRE(::kill(two, SIGKILL) == 0);

  // Each event is stored on its own: the later snapshot holds both losses and both joins.
  WaitForEvents(d, id, " joined at step ", 2);
  const json joined = WaitForEvents(d, id, " lost at step ", 2);
  BOOST_TEST(CountEvents(joined, "1 waits for replacements (cluster.min_workers = 2)") == 1,
             joined.dump());
  BOOST_TEST(CountEvents(joined, "worker 1 joined at step ") == 1, joined.dump());
  BOOST_TEST(CountEvents(joined, "worker 2 joined at step ") == 1, joined.dump());
  BOOST_TEST(CountEvents(joined, ": 3 of 3") >= 1, joined.dump());
  BOOST_TEST(RunningPid(joined, 0) == survivor, "the survivor was restarted");
  BOOST_TEST(joined["restarts"] == 2);  // the two replacements
  BOOST_TEST(CountEvents(joined, "resuming from the newest checkpoint") == 0, joined.dump());
  daemon.WaitForSuccessTakingEveryRowOnce(id, kFewEpochs, kFewSteps);
}

// A sparse job of `threads` threads (its steps record no rows: DTRAIN_RECORD_ROWS would mix its
// lines into the elastic job's) over a small file written to `svm`; `epochs` 0: until cancelled.
std::string SparseJob(const std::string& name, const std::string& svm, int epochs, int threads) {
  const data::ClickData clicks =
      data::MakeClicks({.rows = 600, .features = 1u << 10, .nonzeros = 8, .seed = 6});
  BOOST_REQUIRE(data::WriteLibsvm(clicks.rows, svm).ok());
  return "name = \"" + name + "\"\n[data]\nformat = \"libsvm\"\nsparse = true\ntrain = \"" + svm +
         "\"\n[model]\ntype = \"logistic\"\n[train]\nepochs = " +
         std::to_string(epochs == 0 ? 1000000 : epochs) +
         "\nbatch_size = 40\nthreads = " + std::to_string(threads) +
         "\n[optimizer]\ntype = \"ftrl\"\n";
}

// A daemon of 3 cores, one held by a job that runs until cancelled (`blocker`), and an elastic
// job (`id`) of 3 one-thread replicas (min_workers 2) and `epochs` epochs over rows with ids,
// which has started with 2 of them and reported so (`started`).
struct ShortOfCores : RecordingDaemon {
  explicit ShortOfCores(int epochs)
      : RecordingDaemon(kFewRows, {"--cores", "3", "--max-jobs", "3"}) {
    blocker = d.Submit(SparseJob("blocker", data.Path("blocker.svm"), 0, 1));
    BOOST_REQUIRE(d.WaitForState(blocker, "running")["state"] == "running");
    id = SubmitElastic("grow", epochs, 2, "threads = 1\n");
    // Until it has reported how many replicas train: nothing frees a core meanwhile.
    for (int i = 0; i < 1500 && !started["metrics"].contains("workers_active"); ++i) {
      started = d.Status(id);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    BOOST_REQUIRE_MESSAGE(started["state"] == "running", started.dump() << d.LogTail(id));
    BOOST_TEST(CountEvents(started, "started with 2 of 3 workers") == 1, started.dump());
    BOOST_TEST(started["metrics"]["workers_active"] == 2, started.dump());
    BOOST_TEST(RunningPid(started, 0) > 0);
    BOOST_TEST(RunningPid(started, 1) > 0);
    BOOST_TEST(RunningPid(started, 2) == -1);
  }

  std::int64_t blocker = 0, id = 0;
  json started;
};

// The third replica joins once the other job's core is free; the first two keep their pids.
BOOST_AUTO_TEST_CASE(a_job_starts_with_min_workers_and_grows_as_cores_free_up) {
  constexpr int kGrowEpochs = 2;
  ShortOfCores s(kGrowEpochs);
  const json& small = s.started;
  BOOST_REQUIRE(s.d.Request({{"type", "cancel"}, {"id", s.blocker}})["ok"] == true);
  const json grown = WaitForEvents(s.d, s.id, "worker 2 joined at step ", 1);
  BOOST_TEST(CountEvents(grown, ": 3 of 3") == 1, grown.dump());
  BOOST_TEST(RunningPid(grown, 0) == RunningPid(small, 0));
  BOOST_TEST(RunningPid(grown, 1) == RunningPid(small, 1));
  BOOST_TEST(grown["restarts"] == 0);  // growing is no restart
  const TakenSteps steps = s.WaitForSuccessTakingEveryRowOnce(s.id, kGrowEpochs, kFewSteps);
  BOOST_TEST(steps.smaller_worlds > 0, "no step was trained by fewer replicas");
}

// A queued job that waits for cores keeps its claim on the core the blocker frees: the elastic
// job does not grow, ends with its two replicas, and the queued job starts after it.
BOOST_AUTO_TEST_CASE(a_queued_job_keeps_its_claim_and_the_elastic_job_ends_with_those_it_has) {
  constexpr int kLongEpochs = 10;
  ShortOfCores s(kLongEpochs);
  const std::int64_t waiting = s.d.Submit(SparseJob("two-cores", s.data.Path("two.svm"), 1, 2));
  BOOST_REQUIRE(s.d.Request({{"type", "cancel"}, {"id", s.blocker}})["ok"] == true);
  const json queued = s.d.Status(waiting);
  BOOST_TEST(queued["state"] == "queued", queued.dump());
  // The blocker's core is free, the elastic job's two held.
  BOOST_TEST(queued["reason"] == "waiting for cores (needs 2, 1 free)", queued.dump());

  const json job = s.d.Wait(s.id);
  BOOST_REQUIRE_MESSAGE(job["state"] == "succeeded", job.dump() << s.d.LogTail(s.id));
  BOOST_TEST(job["step"] == kLongEpochs * kFewSteps);
  BOOST_TEST(CountEvents(job, " joined at step ") == 0, job.dump());
  for (const json& w : job["workers"]) BOOST_TEST(w["rank"] != 2, job.dump());
  CheckEveryIdOncePerEpoch(ReadTakenSteps(s.prefix, 2), s.ids, kLongEpochs, kFewSteps);
  BOOST_TEST(s.d.Wait(waiting)["state"] == "succeeded");
}

// Without min_workers, a job whose max_workers is above its workers never starts with fewer than
// its workers: short of cores, it waits for them.
BOOST_AUTO_TEST_CASE(a_job_with_max_workers_only_waits_for_the_cores_of_its_workers) {
  RecordingDaemon daemon(kFewRows, {"--cores", "3", "--max-jobs", "3"});
  const DaemonFixture& d = daemon.d;
  const std::int64_t blocker = d.Submit(SparseJob("blocker", daemon.data.Path("b.svm"), 0, 1));
  BOOST_REQUIRE(d.WaitForState(blocker, "running")["state"] == "running");
  std::string text = RowsWithIdsJob("whole", daemon.data.Path("rows.csv"), 1, kGlobalBatch / 3,
                                    "workers = 3\nmax_workers = 4\n", 0);
  text.replace(text.find("[train]\n"), 8, "[train]\nthreads = 1\n");
  const std::int64_t id = d.Submit(text);
  const json queued = d.Status(id);
  BOOST_TEST(queued["state"] == "queued", queued.dump());
  BOOST_TEST(queued["reason"] == "waiting for cores (needs 3, 2 free)", queued.dump());
  for (const std::int64_t job : {id, blocker}) {
    BOOST_REQUIRE(d.Request({{"type", "cancel"}, {"id", job}})["ok"] == true);
  }
}

// Workers whose rank is `rank` among the job's worker rows (every process started).
int StartedAs(const json& job, int rank) {
  int n = 0;
  for (const json& w : job["workers"]) n += w["rank"] == rank ? 1 : 0;
  return n;
}

// workers = 2, max_workers = 3 (and `cluster_keys`) on a daemon with `cores` cores, enough for
// three replicas: the job starts with its two workers, grows to three members at once, and when
// the third is SIGKILLed the two others carry on in their processes with no replacement started
// (the job has its workers).
void GrowBeyondWorkersThenLoseTheExtraMember(const std::string& cores,
                                             const std::string& cluster_keys) {
  constexpr int kBeyondEpochs = 5;
  const RecordingDaemon daemon(kFewRows, {"--cores", cores});
  const DaemonFixture& d = daemon.d;
  std::string text =
      RowsWithIdsJob("beyond", daemon.data.Path("rows.csv"), kBeyondEpochs, kGlobalBatch / 2,
                     "workers = 2\nmax_workers = 3\n" + cluster_keys, 8);
  text.replace(text.find("[train]\n"), 8, "[train]\nthreads = 1\n");
  const std::int64_t id = d.Submit(text);

  const json grown = WaitForEvents(d, id, "worker 2 joined at step ", 1);
  BOOST_TEST(CountEvents(grown, ": 3 of 2..3") == 1, grown.dump());
  json three = grown;
  for (int i = 0; i < 1500 && three["metrics"].value("workers_active", 0.0) != 3.0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    three = d.Status(id);
  }
  BOOST_REQUIRE_MESSAGE(three["metrics"].value("workers_active", 0.0) == 3.0, three.dump()
                                                                                  << d.LogTail(id));
  const pid_t first = RunningPid(three, 0), second = RunningPid(three, 1);
  BOOST_REQUIRE(::kill(RunningPid(three, 2), SIGKILL) == 0);

  const json job = d.Wait(id);
  BOOST_REQUIRE_MESSAGE(job["state"] == "succeeded", job.dump() << d.LogTail(id));
  BOOST_TEST(job["step"] == kBeyondEpochs * kFewSteps);
  BOOST_TEST(CountEvents(job, "worker 2 lost at step ") == 1, job.dump());
  // Worker 2 was started once (the growth), and no replacement after its loss.
  BOOST_TEST(CountEvents(job, "started worker") == 1, job.dump());
  BOOST_TEST(CountEvents(job, "started again") == 0, job.dump());
  BOOST_TEST(job["restarts"] == 0);
  for (int rank = 0; rank < 3; ++rank) BOOST_TEST(StartedAs(job, rank) == 1, job.dump());
  for (const json& w : job["workers"]) {
    if (w["rank"] == 0) BOOST_TEST(w["pid"] == first);
    if (w["rank"] == 1) BOOST_TEST(w["pid"] == second);
  }
  const TakenSteps steps = ReadTakenSteps(daemon.prefix, 3);
  CheckEveryIdOncePerEpoch(steps, daemon.ids, kBeyondEpochs, kFewSteps);
  BOOST_TEST(steps.smaller_worlds > 0, "no step was trained by two replicas");
}

BOOST_AUTO_TEST_CASE(a_job_grows_beyond_its_workers_and_does_not_replace_the_extra_member) {
  GrowBeyondWorkersThenLoseTheExtraMember("3", "");
}

// The same on one parameter server (its own process, rank 3: a fourth core): the joiner and the
// members regroup through the shard's memberships.
BOOST_AUTO_TEST_CASE(on_a_parameter_server_a_job_grows_beyond_its_workers_and_loses_the_extra) {
  GrowBeyondWorkersThenLoseTheExtraMember("4", "allreduce = \"ps\"\nservers = 1\n");
}

// A job of one worker with max_workers = 2 on a daemon with 2 cores starts alone, on a ring of its
// own rather than as a single-process job, so that its second replica can join it.
BOOST_AUTO_TEST_CASE(a_job_of_one_worker_grows_to_its_max_workers) {
  constexpr int kEpochs = 5;
  const RecordingDaemon daemon(kFewRows, {"--cores", "2"});
  const DaemonFixture& d = daemon.d;
  std::string text = RowsWithIdsJob("lone", daemon.data.Path("rows.csv"), kEpochs, kGlobalBatch,
                                    "workers = 1\nmax_workers = 2\n", 8);
  text.replace(text.find("[train]\n"), 8, "[train]\nthreads = 1\n");
  const std::int64_t id = d.Submit(text);

  const json job = d.Wait(id);
  BOOST_REQUIRE_MESSAGE(job["state"] == "succeeded", job.dump() << d.LogTail(id));
  BOOST_TEST(CountEvents(job, "worker 1 joined at step ") == 1, job.dump());
  BOOST_TEST(CountEvents(job, ": 2 of 1..2") == 1, job.dump());
  BOOST_TEST(job["step"] == kEpochs * kFewSteps);
  BOOST_TEST(job["restarts"] == 0);
  for (int rank = 0; rank < 2; ++rank) BOOST_TEST(StartedAs(job, rank) == 1, job.dump());
  CheckEveryIdOncePerEpoch(ReadTakenSteps(daemon.prefix, 2), daemon.ids, kEpochs, kFewSteps);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace elastic_test
}  // namespace dtrain::testing
