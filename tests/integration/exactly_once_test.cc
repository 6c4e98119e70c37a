// Every training row exactly once per epoch, whatever happens to a synchronous job: a two-replica
// job over a CSV file whose rows carry shuffled ids, with each replica's rows recorded step by
// step (DTRAIN_RECORD_ROWS, daemon/runner/row_recorder.h), through a killed replica, then the
// other, then a killed daemon. Steps redone after a restart (those after the newest checkpoint)
// must take the very rows they took before, and per epoch the steps' rows, over both replicas,
// must be every id once: none twice, none missing.
#include <signal.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "common/temp_dir.h"
#include "integration/daemon_fixture.h"
#include "integration/recorded_rows.h"

namespace dtrain::testing {
namespace {

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

BOOST_AUTO_TEST_SUITE(exactly_once)

BOOST_AUTO_TEST_CASE(every_epoch_takes_every_row_once_through_killed_replicas_and_a_killed_daemon) {
  TempDir data;
  const std::vector<int> ids = WriteRowsWithIds(data.Path("rows.csv"), kRows);
  const std::string prefix = data.Path("taken");
  const RecordedRows recording(prefix);
  DaemonFixture d;
  const std::int64_t id = d.Submit(RowsWithIdsJob("exactly-once", data.Path("rows.csv"), kEpochs,
                                                  kGlobalBatch / 2, "workers = 2\n", 5));

  // Replica 1 killed in the first epoch, replica 0 in the second, the daemon in the third. A
  // job's step moves at its checkpoints, where the replicas wait for the write: each kill comes a
  // little later, so that it usually finds steps past the checkpoint to redo (the messages say
  // how many were; the checks hold wherever a kill lands).
  const auto soon_after_step = [&](std::int64_t step) {
    const json job = d.WaitForStep(id, step);
    BOOST_REQUIRE_MESSAGE(job["state"] == "running", job.dump());
    std::this_thread::sleep_for(std::chrono::milliseconds(40));
    return job;
  };
  BOOST_REQUIRE(::kill(ReplicaPid(soon_after_step(60), 1), SIGKILL) == 0);
  d.WaitForRecovery(id, 4);
  BOOST_REQUIRE(::kill(ReplicaPid(soon_after_step(kStepsPerEpoch + 40), 0), SIGKILL) == 0);
  d.WaitForRecovery(id, 6);
  soon_after_step(2 * kStepsPerEpoch + 40);
  d.Stop(SIGKILL);
  d.Start();
  const json job = d.Wait(id);
  BOOST_REQUIRE_MESSAGE(job["state"] == "succeeded", job.dump() << d.LogTail(id));
  BOOST_TEST(job["step"] == kEpochs * kStepsPerEpoch);

  // A static job: every step recorded by both replicas, each at its rank.
  const TakenSteps steps = ReadTakenSteps(prefix, 2);
  BOOST_TEST(steps.smaller_worlds == 0);
  CheckEveryIdOncePerEpoch(steps, ids, kEpochs, kStepsPerEpoch);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace dtrain::testing
