// The dtrain CLI against a real dtraind: what a user types, end to end.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "daemon_fixture.h"

namespace dtrain::testing {
namespace cli_daemon_test {

using json = nlohmann::json;

constexpr const char* kJob = R"(name = "cli-e2e"
[data]
format = "synthetic"
synthetic = "blobs"
rows = 2000
test_rows = 500
features = 6
classes = 3
[model]
type = "softmax"
[train]
epochs = 2
batch_size = 32
[optimizer]
type = "sgd"
lr = 0.1
[checkpoint]
every_steps = 50
)";

ProcessResult Dtrain(const DaemonFixture& d, std::vector<std::string> args) {
  args.insert(args.begin(), {EnvPath("DTRAIN_BIN"), "--socket", d.socket()});
  return RunProcess(args, d.dir().Path(""));
}

BOOST_AUTO_TEST_CASE(a_user_submits_follows_inspects_exports_and_cancels) {
  DaemonFixture d;
  const std::string job = d.dir().Write("job.toml", kJob);

  // submit follows the job to its end and exits with its result.
  const ProcessResult submitted = Dtrain(d, {"submit", job});
  BOOST_TEST(submitted.exit_code == 0, submitted.err);
  BOOST_TEST(submitted.out.find("step 126 epoch 2.00 test loss") != std::string::npos,
             submitted.out);
  BOOST_TEST(submitted.out.find("completed 126 steps") != std::string::npos);
  // Off a terminal: the lines alone, no progress bar.
  BOOST_TEST(submitted.err.find("\033[K") == std::string::npos, submitted.err);
  BOOST_TEST(submitted.out.find("\033[K") == std::string::npos, submitted.out);

  const ProcessResult status = Dtrain(d, {"status", "1", "--json"});
  BOOST_TEST(status.exit_code == 0);
  const json job_object = json::parse(status.out);
  for (const char* key : {"id", "name", "state", "reason", "step", "metrics", "workers", "events"}) {
    BOOST_TEST(job_object.contains(key), key);
  }
  BOOST_TEST(job_object["state"] == "succeeded");
  // 2 epochs of 63 batches planned; the plan is the total, not a metric; no ETA once ended.
  BOOST_TEST(job_object["total_steps"] == 126, status.out);
  BOOST_TEST(job_object["eta_seconds"].is_null(), status.out);
  BOOST_TEST(!job_object["metrics"].contains("planned_steps"), status.out);
  const ProcessResult listed = Dtrain(d, {"list"});
  BOOST_TEST(listed.out.find("126/126 (100%)") != std::string::npos, listed.out);
  BOOST_TEST(listed.out.find("eval_accuracy ") != std::string::npos, listed.out);

  const ProcessResult metrics = Dtrain(d, {"metrics", "1", "--name", "eval_accuracy", "--format", "csv"});
  BOOST_TEST(metrics.exit_code == 0);
  BOOST_TEST(metrics.out.find("eval_accuracy") != std::string::npos);
  const ProcessResult checkpoints = Dtrain(d, {"checkpoints", "1", "--json"});
  BOOST_TEST(checkpoints.exit_code == 0);
  BOOST_TEST(json::parse(checkpoints.out).back()["step"] == 126, checkpoints.out);

  const ProcessResult exported = Dtrain(d, {"export", "1", "-o", d.dir().Path("m.dtm")});
  BOOST_TEST(exported.exit_code == 0, exported.err);
  const ProcessResult evaluated = Dtrain(d, {"eval", d.dir().Path("m.dtm"), job, "--json"});
  BOOST_TEST(evaluated.exit_code == 0, evaluated.err);
  BOOST_TEST(json::parse(evaluated.out)["accuracy"] == job_object["metrics"]["eval_accuracy"]);

  // A job that cannot finish soon: --no-wait, then cancel; wait reports the cancellation.
  const ProcessResult queued =
      Dtrain(d, {"submit", job, "--no-wait", "--set", "train.epochs=100000"});
  BOOST_TEST(queued.exit_code == 0, queued.err);
  const std::string id = queued.out.substr(0, queued.out.find_first_of("\n"));
  BOOST_TEST(id == "2");
  BOOST_TEST(Dtrain(d, {"cancel", id}).exit_code == 0);
  BOOST_TEST(Dtrain(d, {"wait", id}).exit_code == 130);
  BOOST_TEST(Dtrain(d, {"status", "99"}).exit_code == 4);
  const ProcessResult logs = Dtrain(d, {"logs", "1", "--tail", "1"});
  BOOST_TEST(logs.out == "completed 126 steps\n", logs.out);
}

// A running job: status gives its total, pace and ETA; `logs -f` on a terminal (a pty, from
// util-linux's script) keeps the progress bar below the lines.
BOOST_AUTO_TEST_CASE(a_followed_job_shows_its_progress_between_evaluations) {
  DaemonFixture d;
  const std::string job = d.dir().Write("job.toml", kJob);
  const ProcessResult queued =
      Dtrain(d, {"submit", job, "--no-wait", "--set", "train.epochs=100000"});
  BOOST_REQUIRE_MESSAGE(queued.exit_code == 0, queued.err);
  const std::int64_t id = std::stoll(queued.out);
  BOOST_REQUIRE(d.WaitForStep(id, 300)["state"] == "running");

  const ProcessResult status = Dtrain(d, {"status", std::to_string(id), "--json"});
  const json running = json::parse(status.out);
  BOOST_TEST(running["total_steps"] == 6300000, status.out);  // 100000 epochs of 63 steps
  BOOST_TEST(running["steps_per_sec"].get<double>() > 0.0, status.out);
  BOOST_TEST(running["eta_seconds"].get<double>() > 0.0, status.out);
  const ProcessResult human = Dtrain(d, {"status", std::to_string(id)});
  BOOST_TEST(human.out.find("/6300000 (") != std::string::npos, human.out);
  BOOST_TEST(human.out.find(" steps/s, ETA ") != std::string::npos, human.out);

  const std::string follow = EnvPath("DTRAIN_BIN") + " --socket " + d.socket() + " logs -f " +
                             std::to_string(id);
  auto following = StartProcess({"/usr/bin/script", "-qefc", follow, "/dev/null"},
                                 d.dir().Path(""));
  std::this_thread::sleep_for(std::chrono::seconds(2));  // its first PROGRESS comes at once
  BOOST_TEST(Dtrain(d, {"cancel", std::to_string(id)}).exit_code == 0);
  const ProcessResult tty = following.Wait();  // following ends with the job
  BOOST_TEST(tty.out.find("\r\033[K[") != std::string::npos, tty.out);
  BOOST_TEST(tty.out.find("/6300000 loss ") != std::string::npos, tty.out);
  BOOST_TEST(tty.out.find(" samples/s ETA ") != std::string::npos, tty.out);
}

BOOST_AUTO_TEST_CASE(compare_reads_the_daemons_jobs_and_only_their_owner_reads_their_settings) {
  TempDir config_dir;
  const std::string config = config_dir.Write("dtraind.toml", "[daemon]\nsocket_mode = \"0666\"\n");
  DaemonFixture d({"--config", config});
  ::chmod(d.dir().path().c_str(), 0755);
  const std::string job = d.dir().Write("job.toml", kJob);
  for (const char* lr : {"optimizer.lr=0.1", "optimizer.lr=0.02"}) {
    const ProcessResult r = Dtrain(d, {"submit", job, "--set", lr, "--set", "train.epochs=1"});
    BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  }
  const ProcessResult r = Dtrain(d, {"compare", "1", "2", "--name", "eval_loss", "--json"});
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const json c = json::parse(r.out);
  BOOST_TEST(c["differing"] == json::parse(R"({"optimizer.lr": [0.1, 0.02]})"), r.out);
  for (int i = 0; i < 2; ++i) {
    const json stored = d.Request({{"type", "metrics"}, {"id", i + 1}, {"name", "eval_loss"}});
    BOOST_REQUIRE(!stored["metrics"].empty());
    BOOST_TEST(c["jobs"][i]["final"] == stored["metrics"].back()["value"]);
    BOOST_TEST(c["jobs"][i]["steps"] == 63);
  }
  // The job file is its owner's (and root's) to read: another user (nobody) is refused.
  const json own = d.Request({{"type", "settings"}, {"id", 1}});
  BOOST_TEST(own["spec_toml"].get<std::string>().find("lr = 0.1") != std::string::npos);
  const pid_t child = ::fork();
  if (child == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
    const auto reply = d.TryRequest({{"type", "settings"}, {"id", 1}});
    ::_exit(reply && (*reply)["code"] == "denied" ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  if (::getuid() == 0) BOOST_TEST(WEXITSTATUS(status) == 0);  // denied
}

BOOST_AUTO_TEST_CASE(no_daemon_is_exit_3_with_a_way_forward) {
  TempDir dir;
  const ProcessResult r =
      RunProcess({EnvPath("DTRAIN_BIN"), "--socket", dir.Path("none.sock"), "list"}, dir.Path(""));
  BOOST_TEST(r.exit_code == 3);
  BOOST_TEST(r.err.find("none.sock") != std::string::npos, r.err);
  BOOST_TEST(r.err.find("dtraind") != std::string::npos, r.err);
}

}  // namespace cli_daemon_test
}  // namespace dtrain::testing
