// Heartbeats between a job's processes and their coordinator (a real dtraind): a process that is
// alive but silent — here stopped with SIGSTOP, as a hung process or a cut-off host would be —
// is found within cluster.heartbeat_timeout, killed, and the job recovers; its peers, blocked on
// it, do not wait for cluster.timeout_seconds (set far beyond the test's patience). Processes
// that are merely busy or blocked on a silent peer keep beating and are never blamed.
#include <boost/test/unit_test.hpp>

#include <signal.h>

#include <cerrno>
#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "integration/daemon_fixture.h"

namespace dtrain::testing {
namespace heartbeat_test {

using json = nlohmann::json;

// A job that runs until cancelled, with a 1 s heartbeat timeout and a 10-minute peer timeout.
std::string LongJob(const std::string& cluster) {
  return "name = \"beats\"\n[data]\nformat = \"synthetic\"\nrows = 20000\n"
         "[train]\nepochs = 1000000\nbatch_size = 16\n[cluster]\n" +
         cluster +
         "timeout_seconds = 600\nheartbeat_timeout = 1\n"
         "[checkpoint]\nevery_steps = 50\n[restart]\nmax_restarts = 1\n";
}

json WaitUntil(DaemonFixture& d, std::int64_t id, const std::function<bool(const json&)>& done) {
  json job;
  for (int i = 0; i < 3000; ++i) {  // up to a minute
    job = d.Status(id);
    if (done(job)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return job;
}

bool Running(const json& job) {
  return job["state"] == "running" && job["step"].get<std::int64_t>() > 0;
}

// The reason of the job's last move to "recovering", empty if none. (The restart count moves
// before that event is written, so tests wait for the event.)
std::string RecoveryReason(const json& job) {
  std::string reason;
  for (const json& e : job["events"]) {
    if (e["to"] == "recovering") reason = e["reason"].get<std::string>();
  }
  return reason;
}

// Stops process `victim` (an index into the job's workers) of a running job and checks that the
// daemon kills it for its silence, restarts the job, and names it in the recovery's event.
void StopAndExpectRecovery(const std::string& cluster, std::size_t victim,
                           const std::string& who) {
  DaemonFixture d;
  const std::int64_t id = d.Submit(LongJob(cluster));
  json job = WaitUntil(d, id, Running);
  BOOST_REQUIRE_MESSAGE(Running(job), job.dump());
  const pid_t pid = job["workers"][victim]["pid"].get<pid_t>();
  BOOST_REQUIRE_EQUAL(::kill(pid, SIGSTOP), 0);
  job = WaitUntil(d, id, [](const json& j) {
    return !RecoveryReason(j).empty() && j["events"].back()["to"] == "running" &&
           j["state"] == "running";
  });
  BOOST_TEST(job["restarts"] == 1, job.dump());
  BOOST_TEST(job["state"] == "running", job.dump());
  const std::string recovery = RecoveryReason(job);
  BOOST_TEST(recovery.find(who) != std::string::npos, recovery);
  BOOST_TEST(recovery.find("sent nothing for") != std::string::npos, recovery);
  BOOST_TEST(recovery.find("cluster.heartbeat_timeout is 1 s): killed") != std::string::npos,
             recovery);
  // The stopped process is gone, not left stopped: the daemon reaped it.
  BOOST_TEST((::kill(pid, 0) == -1 && errno == ESRCH), "pid " << pid << " still exists");
  d.Request({{"type", "cancel"}, {"id", id}});
}

BOOST_AUTO_TEST_SUITE(heartbeats)

BOOST_AUTO_TEST_CASE(a_stopped_sync_ring_worker_is_killed_for_its_silence_and_the_job_recovers) {
  StopAndExpectRecovery("workers = 2\nmode = \"sync\"\n", 1, "worker rank 1");
}

BOOST_AUTO_TEST_CASE(a_stopped_sync_ps_worker_is_found_the_same_way) {
  StopAndExpectRecovery("workers = 2\nmode = \"sync\"\nallreduce = \"ps\"\nservers = 1\n", 0,
                        "worker rank 0");
}

BOOST_AUTO_TEST_CASE(a_stopped_parameter_server_shard_is_found_the_same_way) {
  StopAndExpectRecovery("workers = 2\nmode = \"async\"\nservers = 1\n", 2, "shard 0");
}

BOOST_AUTO_TEST_CASE(a_stopped_local_sgd_worker_is_found_the_same_way) {
  StopAndExpectRecovery("workers = 2\nmode = \"local\"\naverage_every = 4\n", 0, "worker rank 0");
}

BOOST_AUTO_TEST_CASE(busy_and_blocked_processes_keep_beating) {
  // Steps of about a second each (batches of 2048 through two 1024-wide layers), with nothing
  // sent upstream between them, under a 0.3 s heartbeat timeout: the beats come from a thread of
  // their own, so the job completes with no restart.
  DaemonFixture d;
  const std::int64_t id = d.Submit(
      "name = \"busy\"\n[data]\nformat = \"synthetic\"\nrows = 8192\n"
      "[model]\ntype = \"mlp\"\nhidden = [1024, 1024]\n"
      "[train]\nepochs = 0\nsteps = 4\nbatch_size = 2048\neval_every = 0\n"
      "[cluster]\nworkers = 2\nmode = \"sync\"\nheartbeat_timeout = 0.3\n"
      "[restart]\nmax_restarts = 0\n");
  const json job = d.Wait(id);
  BOOST_TEST(job["state"] == "succeeded", job.dump());
  BOOST_TEST(job["restarts"] == 0, job.dump());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace heartbeat_test
}  // namespace dtrain::testing
