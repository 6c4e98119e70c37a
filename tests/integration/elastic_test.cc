// Elastic synchronous jobs ([cluster] min_workers): a three-replica job loses a replica three
// times, each time the two survivors carry on in the same processes (their pids stay) on a ring of
// two, and the daemon's replacement joins them at a step boundary; then the daemon itself is
// killed and the job resumes from its checkpoint. Every replica records the rows each step took
// (DTRAIN_RECORD_ROWS) with the membership it trained in: per epoch, the steps' rows over the
// membership that completed each step are every id once, whatever the world was.
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

constexpr int kWorkers = 3, kRows = 12000, kEpochs = 4, kGlobalBatch = 48;
constexpr int kStepsPerEpoch = kRows / kGlobalBatch;  // 250

// The running replica `rank` of the job, as its worker rows say.
pid_t RunningPid(const json& job, int rank) {
  for (const json& w : job["workers"]) {
    if (w["state"] == "running" && w["rank"] == rank) return w["pid"].get<pid_t>();
  }
  return -1;
}

// Events whose reason contains `text`.
int CountEvents(const json& job, const std::string& text) {
  int n = 0;
  for (const json& e : job["events"]) {
    if (e["reason"].get<std::string>().find(text) != std::string::npos) ++n;
  }
  return n;
}

// Polls until `count` events contain `text` and the job runs with every replica (or 60 s pass).
json WaitForEvents(const DaemonFixture& d, std::int64_t id, const std::string& text, int count) {
  json job;
  for (int i = 0; i < 3000; ++i) {
    job = d.Status(id);
    bool all_running = true;
    for (int r = 0; r < kWorkers; ++r) all_running = all_running && RunningPid(job, r) > 0;
    if (CountEvents(job, text) >= count && all_running) return job;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  BOOST_FAIL("no " << count << " events \"" << text
                   << "\" with every replica running: " << job.dump() << d.LogTail(id));
  return job;
}

BOOST_AUTO_TEST_SUITE(elastic)

BOOST_AUTO_TEST_CASE(survivors_carry_on_through_three_losses_and_every_row_is_taken_once) {
  TempDir data;
  const std::vector<int> ids = WriteRowsWithIds(data.Path("rows.csv"), kRows);
  const std::string prefix = data.Path("taken");
  const RecordedRows recording(prefix);
  DaemonFixture d;
  const std::int64_t id =
      d.Submit(RowsWithIdsJob("elastic", data.Path("rows.csv"), kEpochs, kGlobalBatch / kWorkers,
                              "workers = 3\nmin_workers = 2\n", 8));

  // Each loss: the replica is SIGKILLed a little after a step; the two others must go on in the
  // same processes until the replacement has joined.
  const auto lose = [&](int rank, std::int64_t after_step, int losses_before) {
    const json job = d.WaitForStep(id, after_step);
    BOOST_REQUIRE_MESSAGE(job["state"] == "running", job.dump() << d.LogTail(id));
    std::vector<pid_t> before(kWorkers);
    for (int r = 0; r < kWorkers; ++r) before[static_cast<std::size_t>(r)] = RunningPid(job, r);
    BOOST_REQUIRE(::kill(before[static_cast<std::size_t>(rank)], SIGKILL) == 0);
    const json joined = WaitForEvents(d, id, " joined at step ", losses_before + 1);
    BOOST_TEST(CountEvents(joined, "worker " + std::to_string(rank) + " lost at step ") >= 1);
    for (int r = 0; r < kWorkers; ++r) {
      if (r == rank) continue;
      BOOST_TEST(RunningPid(joined, r) == before[static_cast<std::size_t>(r)],
                 "replica " << r << " was restarted when replica " << rank << " was lost");
    }
    // The replacement counts against restart.max_restarts; no attempt was restarted.
    BOOST_TEST(joined["restarts"] == losses_before + 1);
    BOOST_TEST(CountEvents(joined, "resuming from the newest checkpoint") == 0);
  };
  lose(1, 40, 0);
  lose(0, kStepsPerEpoch + 40, 1);  // the replica that writes the checkpoints
  lose(2, 2 * kStepsPerEpoch + 40, 2);
  BOOST_REQUIRE(d.WaitForStep(id, 3 * kStepsPerEpoch + 40)["state"] == "running");
  d.Stop(SIGKILL);
  d.Start();
  const json job = d.Wait(id);
  BOOST_REQUIRE_MESSAGE(job["state"] == "succeeded", job.dump() << d.LogTail(id));
  BOOST_TEST(job["step"] == kEpochs * kStepsPerEpoch);

  const TakenSteps steps = ReadTakenSteps(prefix, kWorkers);
  BOOST_TEST(steps.smaller_worlds > 0, "no step was trained by two replicas");
  CheckEveryIdOncePerEpoch(steps, ids, kEpochs, kStepsPerEpoch);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace dtrain::testing
