// `dtrain why` against a real dtraind: a worker killed with SIGKILL (twice: once restarted from,
// once failing the job) and a cancelled job each have their first cause named.
#include <signal.h>

#include <boost/test/unit_test.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "integration/daemon_fixture.h"

namespace dtrain::testing {
namespace why_test {

using json = nlohmann::json;

// Two sync workers on synthetic data, long enough to be killed or cancelled while running;
// `train` and `checkpoint` add keys to those sections.
std::string LongSyncJob(int max_restarts, const std::string& train = "",
                        const std::string& checkpoint = "") {
  return "name = \"long\"\n[data]\nformat = \"synthetic\"\nrows = 20000\n"
         "[train]\nepochs = 1000000\nbatch_size = 16\n" +
         train +
         "[cluster]\nworkers = 2\nmode = \"sync\"\n"
         "timeout_seconds = 30\n[checkpoint]\nevery_steps = 50\n" +
         checkpoint + "[restart]\nmax_restarts = " + std::to_string(max_restarts) + "\n";
}

ProcessResult Dtrain(const DaemonFixture& d, std::vector<std::string> args) {
  args.insert(args.begin(), {EnvPath("DTRAIN_BIN"), "--socket", d.socket()});
  return RunProcess(args, d.dir().Path(""));
}

json WhyJson(const DaemonFixture& d, std::int64_t id) {
  const ProcessResult why = Dtrain(d, {"why", std::to_string(id), "--json"});
  BOOST_REQUIRE_MESSAGE(why.exit_code == 0, why.err);
  return json::parse(why.out);
}

BOOST_AUTO_TEST_SUITE(dtrain_why)

BOOST_AUTO_TEST_CASE(a_sigkilled_worker_is_named_first_with_its_lines_and_the_restart) {
  DaemonFixture d;
  const std::int64_t id = d.Submit(LongSyncJob(1));
  json job = d.WaitForStep(id, 1);
  BOOST_REQUIRE(job["state"] == "running");
  const pid_t first_victim = job["workers"][1]["pid"].get<pid_t>();
  ::kill(first_victim, SIGKILL);
  job = d.WaitForRecovery(id, 4);
  BOOST_REQUIRE_MESSAGE(job["state"] == "running", job.dump());
  ::kill(job["workers"][3]["pid"].get<pid_t>(), SIGKILL);  // rank 1 of the second attempt
  job = d.Wait(id);
  BOOST_REQUIRE_MESSAGE(job["state"] == "failed", job.dump());

  const json why = WhyJson(d, id);
  const json& cause = why["cause"];
  BOOST_TEST(cause["kind"] == "process", why.dump());
  BOOST_TEST(cause["process"]["rank"] == 1, why.dump());
  BOOST_TEST(cause["process"]["pid"] == first_victim, why.dump());  // the first of the two
  BOOST_TEST(cause["process"]["signal"] == SIGKILL, why.dump());
  BOOST_TEST(cause["process"]["signal_name"] == "SIGKILL", why.dump());
  BOOST_TEST(cause["step"].get<std::int64_t>() >= 1, why.dump());
  BOOST_TEST(!why["last_lines"].empty(), why.dump());
  for (const json& line : why["last_lines"]) BOOST_TEST(line["worker"] == 1, why.dump());
  BOOST_TEST(why["non_finite"].is_null());
  BOOST_REQUIRE(why["restarts"].size() == 1u);
  const std::string restart = why["restarts"][0]["reason"];
  BOOST_TEST(restart.find("worker rank 1") != std::string::npos, restart);
  BOOST_TEST(why["next"][0].get<std::string>().find("out-of-memory") != std::string::npos);

  const ProcessResult human = Dtrain(d, {"why", std::to_string(id)});
  BOOST_TEST(human.exit_code == 0, human.err);
  BOOST_TEST_MESSAGE(human.out);
  BOOST_TEST(human.out.find("First: worker rank 1 (replica") != std::string::npos, human.out);
  BOOST_TEST(human.out.find("was killed by SIGKILL (9)") != std::string::npos, human.out);
  BOOST_TEST(human.out.find("Restarts: 1") != std::string::npos, human.out);
}

// The step of a killed process is the one status showed before the kill, though the checkpoints
// that counted it are pruned (keep = 1) and no metric recorded it; its last lines are of its own
// attempt, not the "resuming from" of the process that took its rank over.
BOOST_AUTO_TEST_CASE(a_killed_process_keeps_its_step_and_its_own_lines_after_a_restart) {
  DaemonFixture d;
  const std::int64_t id =
      d.Submit(LongSyncJob(1, "log_every = 1000000\neval_every = 1000000\n", "keep = 1\n"));
  json job = d.WaitForStep(id, 50);
  BOOST_REQUIRE_MESSAGE(job["state"] == "running", job.dump());
  const std::int64_t shown = job["step"];
  const pid_t first_victim = job["workers"][1]["pid"].get<pid_t>();
  ::kill(first_victim, SIGKILL);
  job = d.WaitForRecovery(id, 4);
  BOOST_REQUIRE_MESSAGE(job["state"] == "running", job.dump());
  job = d.WaitForStep(id, shown + 100);  // the checkpoints before the kill are pruned by now
  json second;  // rank 1 of the second attempt
  for (const json& w : job["workers"]) {
    if (w["rank"] == 1 && w["pid"] != first_victim) second = w;
  }
  BOOST_REQUIRE_MESSAGE(second.is_object(), job.dump());
  ::kill(second["pid"].get<pid_t>(), SIGKILL);
  BOOST_REQUIRE_MESSAGE(d.Wait(id)["state"] == "failed", job.dump());

  const json why = WhyJson(d, id);
  BOOST_TEST(why["cause"]["process"]["pid"] == first_victim, why.dump());
  BOOST_TEST(why["cause"]["step"].get<std::int64_t>() >= shown, why.dump());
  BOOST_TEST(why["cause"]["summary"].get<std::string>().find(" at step 0") == std::string::npos,
             why.dump());
  const double restarted = second["started"];
  BOOST_TEST(!why["last_lines"].empty(), why.dump());
  for (const json& line : why["last_lines"]) {
    BOOST_TEST(line["worker"] == 1, why.dump());
    BOOST_TEST(line["time"].get<double>() < restarted, why.dump());
    BOOST_TEST(line["line"].get<std::string>().find("resuming from") == std::string::npos,
               why.dump());
  }
}

BOOST_AUTO_TEST_CASE(a_cancelled_job_names_the_cancellation_and_its_step) {
  DaemonFixture d;
  const std::int64_t id = d.Submit(LongSyncJob(0));
  BOOST_REQUIRE(d.WaitForStep(id, 1)["state"] == "running");
  BOOST_REQUIRE(Dtrain(d, {"cancel", std::to_string(id)}).exit_code == 0);
  BOOST_REQUIRE(d.Wait(id)["state"] == "cancelled");

  const json why = WhyJson(d, id);
  BOOST_TEST(why["cause"]["kind"] == "cancelled", why.dump());
  const std::string summary = why["cause"]["summary"];
  BOOST_TEST(summary.find("cancelled by uid ") == 0u, summary);
  BOOST_TEST(why["restarts"].empty());
  // The workers stopped as asked (exit 130): none of them is a failure.
  BOOST_TEST(!why["cause"].contains("process"), why.dump());
  BOOST_TEST(why["next"].size() == 1u, why.dump());
}

BOOST_AUTO_TEST_CASE(an_unknown_job_is_not_found) {
  DaemonFixture d;
  const ProcessResult why = Dtrain(d, {"why", "42"});
  BOOST_TEST(why.exit_code == 4, why.err);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace why_test
}  // namespace dtrain::testing
