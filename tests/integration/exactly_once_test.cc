// Every training row exactly once per epoch, whatever happens to a synchronous job: a job over a
// CSV file whose rows carry shuffled ids, with each replica's rows recorded step by step
// (DTRAIN_RECORD_ROWS, daemon/runner/row_recorder.h), through killed replicas and a killed
// daemon. Two replicas on the ring: steps redone after a restart (those after the newest
// checkpoint) must take the very rows they took before. Three replicas on a parameter server with
// a backup worker, one of them a straggler (DTRAIN_STRAGGLE): a step goes on without the last
// gradient, whose rows the next step takes. The same elastic (min_workers 2): each lost replica's
// survivors carry on and its replacement joins them, the masks of each membership saying which
// positions' rows its steps took; and elastic on two parameter servers without backups, where a
// replica killed between its pushes leaves a step on one shard that the survivors undo. Either way,
// per epoch the steps' rows, over the replicas whose
// gradients they took, must be every id once: none twice, none missing.
#include <signal.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/temp_dir.h"
#include "integration/daemon_fixture.h"
#include "integration/elastic_jobs.h"
#include "integration/recorded_rows.h"
#include "integration/stored_metrics.h"

namespace dtrain::testing {
namespace exactly_once_test {

using json = nlohmann::json;

constexpr int kRows = 12000, kEpochs = 4, kGlobalBatch = 48;
constexpr int kStepsPerEpoch = kRows / kGlobalBatch;  // 250: the last batch is whole

// The running replica `rank` of `job`'s newest attempt.
pid_t ReplicaPid(const json& job, int rank) {
  for (const json& w : job["workers"]) {
    if (w["state"] == "running" && w["rank"] == rank) return w["pid"].get<pid_t>();
  }
  BOOST_FAIL("no running replica " << rank << ": " << job.dump());
  return -1;
}

// Polls `job` until it runs at `step` or later, then a little longer: a job's step moves at its
// checkpoints, where the replicas wait for the write, so that a kill then usually finds steps
// past the checkpoint to redo (the messages say how many were; the checks hold wherever a kill
// lands).
json SoonAfterStep(const DaemonFixture& d, std::int64_t id, std::int64_t step) {
  const json job = d.WaitForStep(id, step);
  BOOST_REQUIRE_MESSAGE(job["state"] == "running", job.dump());
  std::this_thread::sleep_for(std::chrono::milliseconds(40));
  return job;
}

// Kills replica kills[e] early in epoch e, each restarting the attempt (`processes` more worker
// rows), then the daemon early in the next epoch; the job must then succeed.
void KillReplicasThenTheDaemon(DaemonFixture& d, std::int64_t id, const std::vector<int>& kills,
                               std::size_t processes) {
  for (std::size_t e = 0; e < kills.size(); ++e) {
    const std::int64_t step = e == 0 ? 60 : static_cast<std::int64_t>(e) * kStepsPerEpoch + 40;
    BOOST_REQUIRE(::kill(ReplicaPid(SoonAfterStep(d, id, step), kills[e]), SIGKILL) == 0);
    d.WaitForRecovery(id, (e + 2) * processes);
  }
  SoonAfterStep(d, id, static_cast<std::int64_t>(kills.size()) * kStepsPerEpoch + 40);
  d.Stop(SIGKILL);
  d.Start();
  const json job = d.Wait(id);
  BOOST_REQUIRE_MESSAGE(job["state"] == "succeeded", job.dump() << d.LogTail(id));
  BOOST_TEST(job["step"] == kEpochs * kStepsPerEpoch);
}

BOOST_AUTO_TEST_SUITE(exactly_once, *boost::unit_test::label("long"))

BOOST_AUTO_TEST_CASE(every_epoch_takes_every_row_once_through_killed_replicas_and_a_killed_daemon) {
  TempDir data;
  const std::vector<int> ids = WriteRowsWithIds(data.Path("rows.csv"), kRows);
  const std::string prefix = data.Path("taken");
  const RecordedRows recording(prefix);
  DaemonFixture d;
  const std::int64_t id = d.Submit(RowsWithIdsJob("exactly-once", data.Path("rows.csv"), kEpochs,
                                                  kGlobalBatch / 2, "workers = 2\n", 5));

  // Replica 1 killed in the first epoch, replica 0 in the second, the daemon in the third.
  KillReplicasThenTheDaemon(d, id, {1, 0}, 2);

  // A static job: every step recorded by both replicas, each at its rank.
  const TakenSteps steps = ReadTakenSteps(prefix, 2);
  BOOST_TEST(steps.smaller_worlds == 0);
  CheckEveryIdOncePerEpoch(steps, ids, kEpochs, kStepsPerEpoch);
}

BOOST_AUTO_TEST_CASE(with_backups_every_epoch_takes_every_row_once_through_drops_kills_and_a_killed_daemon) {
  constexpr int kWorkers = 3;  // and one shard
  constexpr int kStraggler = 2;
  TempDir data;
  const std::vector<int> ids = WriteRowsWithIds(data.Path("rows.csv"), kRows);
  const std::string prefix = data.Path("taken");
  const RecordedRows recording(prefix);
  // The straggler takes 4 times as long on 30 % of its steps.
  const DaemonEnvironment straggling("DTRAIN_STRAGGLE", std::to_string(kStraggler) + " 30 4");
  DaemonFixture d;
  const std::int64_t id = d.Submit(RowsWithIdsJob(
      "exactly-once-with-backups", data.Path("rows.csv"), kEpochs, kGlobalBatch / kWorkers,
      "workers = 3\nallreduce = \"ps\"\nservers = 1\nbackup_workers = 1\n", 6));

  // Each replica killed once, in the first three epochs, and the daemon in the last; every kill
  // restarts the attempt (its replicas and shard) from the newest checkpoint.
  KillReplicasThenTheDaemon(d, id, {1, 0, kStraggler}, kWorkers + 1);

  const TakenSteps steps = ReadTakenSteps(prefix, kWorkers);
  BOOST_TEST(steps.smaller_worlds == 0);
  BOOST_TEST(steps.left_out > 0, "no step went on without a gradient");
  CheckEveryIdOncePerEpoch(steps, ids, kEpochs, kStepsPerEpoch);
  BOOST_TEST(LargestOf(d, id, "dropped_gradients", kStraggler) > 0.0,
             "the straggler's gradients were never dropped");
}

constexpr int kFewRows = 4800, kFewSteps = kFewRows / kElasticGlobalBatch;  // 100 an epoch

// An elastic job of `daemon`'s (workers = 3, min_workers = 2) with `cluster_keys`: each replica
// killed in turn (replica 2 last), the survivors carry on in their processes and the replacement
// joins them; then the daemon is killed and the job resumes from its checkpoint. Returns the job
// and the steps it took, every row once per epoch.
std::pair<std::int64_t, TakenSteps> LoseEachReplicaThenTheDaemon(RecordingDaemon& daemon,
                                                                 const std::string& name,
                                                                 const std::string& cluster_keys) {
  DaemonFixture& d = daemon.d;
  const std::int64_t id = daemon.SubmitElastic(name, kEpochs, 8, "", cluster_keys);
  LoseAndReplace(d, id, 1, 40, 0);
  LoseAndReplace(d, id, 0, kFewSteps + 40, 1);  // the member that writes the checkpoints
  LoseAndReplace(d, id, 2, 2 * kFewSteps + 40, 2);
  SoonAfterStep(d, id, 3 * kFewSteps + 40);
  d.Stop(SIGKILL);
  d.Start();
  const TakenSteps steps = daemon.WaitForSuccessTakingEveryRowOnce(id, kEpochs, kFewSteps);
  BOOST_TEST(steps.smaller_worlds > 0, "no step was trained by fewer replicas");
  return {id, steps};
}

// Elastic on one parameter server with a backup worker (backup_workers = 1), replica 2 a
// straggler: a membership of two goes on without one of them too.
BOOST_AUTO_TEST_CASE(
    elastic_with_backups_every_epoch_takes_every_row_once_through_losses_and_joins) {
  constexpr int kStraggler = 2;
  const DaemonEnvironment straggling("DTRAIN_STRAGGLE", std::to_string(kStraggler) + " 30 4");
  RecordingDaemon daemon(kFewRows);
  const auto [id, steps] = LoseEachReplicaThenTheDaemon(
      daemon, "elastic-backups", "allreduce = \"ps\"\nservers = 1\nbackup_workers = 1\n");
  BOOST_TEST(steps.left_out > 0, "no step went on without a gradient");
  BOOST_TEST(LargestOf(daemon.d, id, "dropped_gradients", kStraggler) > 0.0,
             "the straggler's gradients were never dropped");
}

// Elastic on two parameter servers: a replica killed between its pushes to the two shards leaves
// its step applied on one, which the survivors' membership undoes; either way no row is lost or
// taken twice.
BOOST_AUTO_TEST_CASE(
    elastic_on_two_servers_every_epoch_takes_every_row_once_through_losses_and_joins) {
  RecordingDaemon daemon(kFewRows);
  const TakenSteps steps = LoseEachReplicaThenTheDaemon(daemon, "elastic-two-servers",
                                                        "allreduce = \"ps\"\nservers = 2\n")
                               .second;
  BOOST_TEST(steps.left_out == 0);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace exactly_once_test
}  // namespace dtrain::testing
