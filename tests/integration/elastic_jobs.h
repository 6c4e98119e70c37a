// Helpers for integration tests of elastic jobs (cluster.min_workers): a daemon whose replicas
// record the rows each step took (recorded_rows.h) and submits elastic jobs of three replicas
// (min_workers 2) over rows with ids; a replica killed and replaced while the others carry on in
// their processes; and polls of a job's events and running replicas.
//
//   RecordingDaemon daemon(4800);
//   const std::int64_t id = daemon.SubmitElastic("elastic", 4, 8);
//   LoseAndReplace(daemon.d, id, 1, 40, 0);     // kill replica 1 after step 40; it rejoins
//   daemon.WaitForSuccessTakingEveryRowOnce(id, 4, 100);
//
// Boost.Test checks; one thread at a time.
#pragma once

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
#include "integration/recorded_rows.h"

namespace dtrain::testing {

// An elastic job's replicas (workers; min_workers is 2) and the rows of a step between them.
inline constexpr int kElasticWorkers = 3, kElasticGlobalBatch = 48;

// The running replica `rank` of the job, as its worker rows say.
inline pid_t RunningPid(const nlohmann::json& job, int rank) {
  for (const nlohmann::json& w : job["workers"]) {
    if (w["state"] == "running" && w["rank"] == rank) return w["pid"].get<pid_t>();
  }
  return -1;
}

// Events whose reason contains `text`.
inline int CountEvents(const nlohmann::json& job, const std::string& text) {
  int n = 0;
  for (const nlohmann::json& e : job["events"]) {
    if (e["reason"].get<std::string>().find(text) != std::string::npos) ++n;
  }
  return n;
}

// Polls until `count` events contain `text` and the job runs with every replica (or 60 s pass).
inline nlohmann::json WaitForEvents(const DaemonFixture& d, std::int64_t id,
                                    const std::string& text, int count) {
  nlohmann::json job;
  for (int i = 0; i < 3000; ++i) {
    job = d.Status(id);
    bool all_running = true;
    for (int r = 0; r < kElasticWorkers; ++r) all_running = all_running && RunningPid(job, r) > 0;
    if (CountEvents(job, text) >= count && all_running) return job;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  BOOST_FAIL("no " << count << " events \"" << text
                   << "\" with every replica running: " << job.dump() << d.LogTail(id));
  return job;
}

// Replica `rank` of job `id` SIGKILLed a little after `after_step`, its `losses_before`-th loss:
// the others must go on in the same processes until the replacement has joined. Returns the job
// then.
inline nlohmann::json LoseAndReplace(const DaemonFixture& d, std::int64_t id, int rank,
                                     std::int64_t after_step, int losses_before) {
  const nlohmann::json job = d.WaitForStep(id, after_step);
  BOOST_REQUIRE_MESSAGE(job["state"] == "running", job.dump() << d.LogTail(id));
  std::vector<pid_t> before(kElasticWorkers);
  for (int r = 0; r < kElasticWorkers; ++r)
    before[static_cast<std::size_t>(r)] = RunningPid(job, r);
  BOOST_REQUIRE(::kill(before[static_cast<std::size_t>(rank)], SIGKILL) == 0);
  const nlohmann::json joined = WaitForEvents(d, id, " joined at step ", losses_before + 1);
  BOOST_TEST(CountEvents(joined, "worker " + std::to_string(rank) + " lost at step ") >= 1);
  for (int r = 0; r < kElasticWorkers; ++r) {
    if (r == rank) continue;
    BOOST_TEST(RunningPid(joined, r) == before[static_cast<std::size_t>(r)],
               "replica " << r << " was restarted when replica " << rank << " was lost");
  }
  // The replacement counts against restart.max_restarts; no attempt was restarted.
  BOOST_TEST(joined["restarts"] == losses_before + 1);
  BOOST_TEST(CountEvents(joined, "resuming from the newest checkpoint") == 0);
  // The job's reason is its membership now (a status's reason is never older than its events).
  const std::string reason = joined["reason"].get<std::string>();
  BOOST_TEST((reason.find("worker " + std::to_string(rank) + " joined at step ") == 0 &&
              reason.ends_with(": 3 of 3")),
             reason);
  return joined;
}

// A daemon (started with `daemon_args`) whose jobs' replicas record the rows each step took, and
// `rows` rows with ids for its elastic jobs.
struct RecordingDaemon {
  explicit RecordingDaemon(int rows, std::vector<std::string> daemon_args = {})
      : ids(WriteRowsWithIds(data.Path("rows.csv"), rows)),
        prefix(data.Path("taken")),
        recording(prefix),
        d(std::move(daemon_args)) {}

  // An elastic job of kElasticWorkers replicas (min_workers 2) over the rows, with `train_keys`
  // added to its [train] section and `cluster_keys` to its [cluster] section, in `mode`.
  std::int64_t SubmitElastic(const std::string& name, int epochs, int max_restarts,
                             const std::string& train_keys = "",
                             const std::string& cluster_keys = "",
                             const std::string& mode = "sync") const {
    std::string text =
        RowsWithIdsJob(name, data.Path("rows.csv"), epochs, kElasticGlobalBatch / kElasticWorkers,
                       "workers = 3\nmin_workers = 2\n" + cluster_keys, max_restarts, mode);
    text.replace(text.find("[train]\n"), 8, "[train]\n" + train_keys);
    return d.Submit(text);
  }

  // Waits for job `id` to succeed after all its steps, every row taken once per epoch by the
  // steps' memberships; returns those steps.
  TakenSteps WaitForSuccessTakingEveryRowOnce(std::int64_t id, int epochs,
                                              int steps_per_epoch) const {
    const nlohmann::json job = d.Wait(id);
    BOOST_REQUIRE_MESSAGE(job["state"] == "succeeded", job.dump() << d.LogTail(id));
    BOOST_TEST(job["step"] == epochs * steps_per_epoch);
    TakenSteps steps = ReadTakenSteps(prefix, kElasticWorkers);
    CheckEveryIdOncePerEpoch(steps, ids, epochs, steps_per_epoch);
    return steps;
  }

  TempDir data;
  std::vector<int> ids;
  std::string prefix;
  RecordedRows recording;
  DaemonFixture d;
};

}  // namespace dtrain::testing
