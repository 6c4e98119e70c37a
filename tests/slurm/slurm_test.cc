// Jobs placed by a real Slurm (cluster.scheduler = "slurm"): munged, slurmctld and slurmd started
// for this test binary by tests/slurm/slurm-up (a one-node cluster of this machine's cores), and
// a real root dtraind listening on loopback TCP, where the tasks connect back. Fashion-MNIST sync
// and async jobs succeed with their metrics and logs in the store and squeue showing them while
// they run; `dtrain cancel` leaves no Slurm job and no process; scancel of one task's step is a
// worker failure that restarts the job from its checkpoint in a new allocation; a job preempted
// by another partition's says so and resumes once Slurm lets it; a job waiting in Slurm's queue
// can be cancelled; an allocation Slurm refuses fails the job with Slurm's words; a user's job
// is that user's Slurm job; an elastic job starts with min_workers' allocation and grows as
// Slurm grants its further replicas (the node's other cores held by another Slurm job until
// then), or ends with what it has when Slurm grants none; a grown replica lost and not replaced
// gives its allocation back at once, and status names every grant of the attempt. Skipped, saying
// why, where Slurm cannot start (not root, slurm-wlm not installed).
#include <boost/test/unit_test.hpp>

#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/idx_files.h"
#include "common/process.h"
#include "common/temp_dir.h"
#include "core/net/frame_stream.h"
#include "core/net/host_info.h"
#include "integration/daemon_fixture.h"
#include "integration/test_user.h"

namespace dtrain::testing {
namespace slurm_test {

using json = nlohmann::json;
using namespace std::chrono_literals;

// The test binary's Slurm: started once, stopped at the end.
class SlurmCluster {
 public:
  SlurmCluster() {
    const char* source = std::getenv("DTRAIN_SOURCE_DIR");
    if (source == nullptr) {
      why_not_ = "DTRAIN_SOURCE_DIR is not set (run through ctest)";
      return;
    }
    scripts_ = std::string(source) + "/tests/slurm/";
    ::chmod(dir_.path().c_str(), 0755);  // every user reads slurm.conf and reaches munged
    const ProcessResult up = RunProcess({"/bin/bash", scripts_ + "slurm-up", dir_.Path("slurm")},
                                        dir_.Path(""));
    if (up.exit_code == 2) {  // cannot run here (not root, not installed): the tests are skipped
      why_not_ = "Slurm cannot start here: " + up.err;
      return;
    }
    if (up.exit_code != 0) {  // it should have: the tests fail, saying why
      failure_ = "Slurm did not come up: " + up.err;
      return;
    }
    ::setenv("SLURM_CONF", dir_.Path("slurm/slurm.conf").c_str(), 1);  // the daemon inherits it
  }
  ~SlurmCluster() {
    if (!scripts_.empty()) RunProcess({"/bin/bash", scripts_ + "slurm-down", dir_.Path("slurm")}, dir_.Path(""));
  }
  static SlurmCluster*& Instance() {
    static SlurmCluster* instance = nullptr;
    return instance;
  }
  const std::string& why_not() const { return why_not_; }
  const std::string& failure() const { return failure_; }
  const TempDir& dir() const { return dir_; }

 private:
  TempDir dir_;
  std::string scripts_;
  std::string why_not_;
  std::string failure_;
};

struct SlurmGlobal {
  SlurmGlobal() { SlurmCluster::Instance() = new SlurmCluster(); }
  ~SlurmGlobal() {
    delete SlurmCluster::Instance();
    SlurmCluster::Instance() = nullptr;
  }
};
BOOST_TEST_GLOBAL_FIXTURE(SlurmGlobal);

boost::test_tools::assertion_result SlurmRuns(boost::unit_test::test_unit_id id) {
  boost::test_tools::assertion_result fashion = FashionMnistPresent(id);
  if (!fashion) return fashion;
  const SlurmCluster* slurm = SlurmCluster::Instance();
  boost::test_tools::assertion_result runs(slurm != nullptr && slurm->why_not().empty());
  runs.message() << (slurm == nullptr ? "no Slurm" : slurm->why_not());
  return runs;
}

// SlurmRuns, on a node of at least 2 cores (an elastic job's growth needs a core to grow into).
boost::test_tools::assertion_result SlurmRunsOnTwoCores(boost::unit_test::test_unit_id id) {
  boost::test_tools::assertion_result runs = SlurmRuns(id);
  if (!runs) return runs;
  boost::test_tools::assertion_result two(net::OnlineCores() >= 2);
  two.message() << "the one-node Slurm has " << net::OnlineCores() << " core; growth needs 2";
  return two;
}

// A command's output, run from PATH through /usr/bin/env.
ProcessResult Run(std::vector<std::string> argv) {
  argv.insert(argv.begin(), "/usr/bin/env");
  return RunProcess(argv, SlurmCluster::Instance()->dir().Path(""));
}

// Every core of the one-node Slurm but one held by another Slurm job, named "holder".
void HoldAllCoresButOne() {
  const ProcessResult holder =
      Run({"salloc", "--no-shell", "--partition=debug",
           "--ntasks=" + std::to_string(net::OnlineCores() - 1), "--job-name=holder"});
  BOOST_TEST_REQUIRE(holder.exit_code == 0, holder.err);
}

// The Slurm jobs (or, with `steps`, job steps) squeue lists by name, as "ID NAME" lines.
std::string Squeue(bool steps = false) {
  std::vector<std::string> argv = {"squeue", "--noheader", "--format=%i %j"};
  if (steps) argv.push_back("--steps");
  return Run(argv).out;
}

std::string AllocationName(std::int64_t id) {
  return "dtrain-" + net::LocalHostName() + "-" + std::to_string(id);
}

bool SqueueShows(const std::string& name, bool steps = false) {
  return Squeue(steps).find(" " + name + "\n") != std::string::npos;
}

// Polls until `done` holds, or 20 s pass; whether it held.
template <typename Done>
bool Eventually(Done done) {
  for (int i = 0; i < 400; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(50ms);
  }
  return done();
}

// A root daemon that listens on loopback TCP (the tasks' way back), its socket open to every
// user, run from binaries every user may run.
struct SlurmDaemon {
  SlurmDaemon() : daemon(Arguments(config, port), bins.dtraind) {
    const SlurmCluster* slurm = SlurmCluster::Instance();
    BOOST_REQUIRE_MESSAGE(slurm == nullptr || slurm->failure().empty(), slurm->failure());
    ::chmod(daemon.dir().path().c_str(), 0755);  // users reach the socket
  }
  static std::vector<std::string> Arguments(TempDir& dir, std::uint16_t port) {
    dir.Write("dtraind.toml", "[daemon]\nsocket_mode = \"0666\"\n[cluster]\nlisten = \"127.0.0.1:" +
                                  std::to_string(port) + "\"\n");
    return {"--config", dir.Path("dtraind.toml")};
  }
  TempDir config;
  std::uint16_t port = FreePort();
  SharedBinaries bins;
  DaemonFixture daemon;
};

std::string FashionJob(const std::string& cluster, int epochs, const std::string& extra = "") {
  return R"(name = "slurm-fashion"
[data]
format = "idx"
train = ")" + kFashionDir + R"(/train-images-idx3-ubyte.gz"
train_labels = ")" + kFashionDir + R"(/train-labels-idx1-ubyte.gz"
test = ")" + kFashionDir + R"(/t10k-images-idx3-ubyte.gz"
test_labels = ")" + kFashionDir + R"(/t10k-labels-idx1-ubyte.gz"
scale = 255.0
[model]
type = "mlp"
hidden = [64]
[train]
batch_size = 64
epochs = )" + std::to_string(epochs) + R"(
[optimizer]
type = "adam"
lr = 0.002
[cluster]
)" + cluster + R"(
scheduler = "slurm"
[slurm]
partition = "debug"
time_limit = "30"
)" + extra;
}

// Submits `job`, requires squeue to show its allocation while it runs, and returns the job
// once it ended.
json RunWatched(const DaemonFixture& daemon, const std::string& job) {
  const std::int64_t id = daemon.Submit(job);
  BOOST_TEST(Eventually([&] { return SqueueShows(AllocationName(id)); }),
             "squeue never showed " << AllocationName(id));
  return daemon.Wait(id);
}

void RequireTrainedAndRecorded(const DaemonFixture& daemon, const json& job, int processes) {
  BOOST_TEST_REQUIRE(job["state"] == "succeeded", job.dump());
  BOOST_TEST(job["metrics"]["eval_accuracy"].get<double>() > 0.7);  // it learned (chance: 0.1)
  BOOST_TEST(job["slurm"]["job_id"].get<std::int64_t>() > 0);
  BOOST_TEST(job["slurm"]["nodes"] == net::LocalHostName());
  BOOST_TEST(job["workers"].size() == static_cast<std::size_t>(processes));
  for (const json& w : job["workers"]) BOOST_TEST(w["exit_status"] == 0, w.dump());
  const json logs = daemon.Request({{"type", "logs"}, {"id", job["id"]}});
  BOOST_TEST(logs.dump().find("completed") != std::string::npos, logs.dump());
  // `dtrain status` names the Slurm job and its nodes.
  const ProcessResult status = RunProcess(
      {EnvPath("DTRAIN_BIN"), "status", std::to_string(job["id"].get<std::int64_t>()), "--socket",
       daemon.socket()},
      SlurmCluster::Instance()->dir().Path(""));
  BOOST_TEST(status.out.find("slurm     job " + std::to_string(job["slurm"]["job_id"].get<std::int64_t>()) +
                             " on " + net::LocalHostName()) != std::string::npos,
             status.out);
  // The allocation ends with the job.
  BOOST_TEST(Eventually([&] { return !SqueueShows(AllocationName(job["id"])); }));
}

// [cluster] keys of a job whose tasks take all of the node's cores (this machine's).
std::string NodeFillingCluster() {
  const int cores = net::OnlineCores();
  return "workers = " + std::to_string(cores) + "\nmode = \"" + (cores > 1 ? "sync" : "single") +
         "\"";
}

// Whether the job's log comes to hold `text` (within Eventually's time).
bool LogsShow(const DaemonFixture& daemon, std::int64_t id, const std::string& text,
              std::string* logs) {
  return Eventually([&] {
    *logs = daemon.Request({{"type", "logs"}, {"id", id}}).dump();
    return logs->find(text) != std::string::npos;
  });
}

// scancel of the Slurm step that runs rank `rank` of job `id`, found by the name its stand-in
// gives it.
void CancelTask(std::int64_t id, int rank) {
  const std::string task_name = "dtrain-" + std::to_string(id) + "-rank-" + std::to_string(rank);
  const std::string steps = Squeue(true);
  const std::size_t at = steps.find(" " + task_name + "\n");
  BOOST_TEST_REQUIRE(at != std::string::npos, steps);
  const std::size_t line_start = steps.rfind('\n', at);
  const std::size_t begin = line_start == std::string::npos ? 0 : line_start + 1;
  BOOST_TEST_REQUIRE(Run({"scancel", steps.substr(begin, at - begin)}).exit_code == 0);
}

// The job, restarted, resumes from its checkpoint; then it is cancelled, its allocation with it.
void RequireResumedThenCancel(const DaemonFixture& daemon, std::int64_t id) {
  std::string logs;
  BOOST_TEST(LogsShow(daemon, id, "resuming from step", &logs), logs);
  daemon.Request({{"type", "cancel"}, {"id", id}});
  BOOST_TEST(Eventually([&] { return !SqueueShows(AllocationName(id)); }), Squeue());
}

BOOST_AUTO_TEST_SUITE(slurm)

// Needs no Slurm: the TCP listener's keyless worker channel, which Slurm tasks open.
BOOST_AUTO_TEST_CASE(a_keyless_worker_channel_admits_nothing_without_a_token_and_waits_for_no_one) {
  SlurmDaemon d;
  const auto open_channel = [&] {
    auto stream = net::FrameStream::ConnectTcp("127.0.0.1", d.port, 5s);
    BOOST_TEST_REQUIRE(stream.ok(), stream.status().message());
    const json ask = {{"v", 1}, {"type", "worker_channel"}};
    BOOST_TEST_REQUIRE(
        stream.value().WriteString(net::MessageType::kControl, 0, 0, ask.dump(), 5s).ok());
    auto answer = stream.value().Read(5s);
    BOOST_TEST_REQUIRE(answer.ok());
    BOOST_TEST(json::parse(answer.value().payload)["ok"] == true);
    return std::move(stream).value();
  };
  // A hello with a token no process of a Slurm job holds is refused, and the connection closed.
  net::FrameStream guessing = open_channel();
  const json hello = {{"v", 1}, {"type", "worker_hello"}, {"job", 1}, {"rank", 0},
                      {"token", std::string(64, 'a')}, {"data_host", "127.0.0.1"},
                      {"data_port", 1}, {"partition_port", 1}};
  BOOST_TEST_REQUIRE(
      guessing.WriteString(net::MessageType::kControl, 0, 0, hello.dump(), 5s).ok());
  auto refused = guessing.Read(5s);
  BOOST_TEST_REQUIRE(refused.ok());
  BOOST_TEST(json::parse(refused.value().payload)["code"] == "denied", refused.value().payload);
  // One that says nothing more is closed by the daemon (after the handshake's 5 s), not held
  // open: the read ends "closed", long before its own 60 s would end it "timeout".
  net::FrameStream idle = open_channel();
  const Result<net::Frame> nothing = idle.Read(60s);
  BOOST_TEST_REQUIRE(!nothing.ok());
  BOOST_TEST(nothing.status().message().rfind("closed", 0) == 0, nothing.status().message());
  // Anything else first, without the key, is not a channel: the daemon still answers queries.
  BOOST_TEST(d.daemon.Request({{"type", "version"}})["ok"] == true);
}

BOOST_AUTO_TEST_CASE(a_sync_job_runs_as_two_slurm_tasks, *boost::unit_test::precondition(SlurmRuns)) {
  SlurmDaemon d;
  const json job = RunWatched(d.daemon, FashionJob("workers = 2\nmode = \"sync\"", 2));
  RequireTrainedAndRecorded(d.daemon, job, 2);
}

BOOST_AUTO_TEST_CASE(an_async_job_runs_its_replica_and_shard_as_tasks,
                     *boost::unit_test::precondition(SlurmRuns)) {
  SlurmDaemon d;
  const json job = RunWatched(d.daemon, FashionJob("workers = 1\nmode = \"async\"\nservers = 1", 2));
  RequireTrainedAndRecorded(d.daemon, job, 2);
}

BOOST_AUTO_TEST_CASE(cancel_leaves_no_slurm_job_and_no_process,
                     *boost::unit_test::precondition(SlurmRuns)) {
  SlurmDaemon d;
  const std::int64_t id = d.daemon.Submit(FashionJob("workers = 2\nmode = \"sync\"", 1000));
  const json running = d.daemon.WaitForStep(id, 50);
  BOOST_TEST_REQUIRE(running["state"] == "running", running.dump());
  BOOST_TEST(SqueueShows(AllocationName(id)));
  const json reply = d.daemon.Request({{"type", "cancel"}, {"id", id}});
  BOOST_TEST_REQUIRE(reply["ok"] == true, reply.dump());
  BOOST_TEST(d.daemon.Status(id)["state"] == "cancelled");
  BOOST_TEST(Eventually([&] { return !SqueueShows(AllocationName(id)); }), Squeue());
  // This daemon's tasks (and their sruns), not another test's workers with the same job id.
  const std::string workers = "worker --job " + std::to_string(id) + " --rank [0-9]+ --connect " +
                              "127.0.0.1:" + std::to_string(d.port) + "$";
  BOOST_TEST(Eventually([&] { return Run({"pgrep", "-f", workers}).exit_code == 1; }),
             "a worker process of job " << id << " outlived the cancel");
}

BOOST_AUTO_TEST_CASE(scancel_of_a_task_restarts_the_job_from_its_checkpoint,
                     *boost::unit_test::precondition(SlurmRuns)) {
  SlurmDaemon d;
  const std::int64_t id = d.daemon.Submit(FashionJob(
      "workers = 2\nmode = \"sync\"", 1000, "[checkpoint]\nevery_steps = 100\n[restart]\nmax_restarts = 2\n"));
  const json running = d.daemon.WaitForStep(id, 250);
  BOOST_TEST_REQUIRE(running["state"] == "running", running.dump());
  const std::int64_t first_allocation = running["slurm"]["job_id"];
  CancelTask(id, 1);
  const json recovered = d.daemon.WaitForRecovery(id, 4);
  BOOST_TEST_REQUIRE(recovered["state"] == "running", recovered.dump());
  BOOST_TEST(recovered["restarts"] == 1);
  BOOST_TEST(recovered["slurm"]["job_id"].get<std::int64_t>() != first_allocation);
  RequireResumedThenCancel(d.daemon, id);
}

BOOST_AUTO_TEST_CASE(an_async_replica_whose_task_is_cancelled_restarts_alone_in_the_allocation,
                     *boost::unit_test::precondition(SlurmRuns)) {
  SlurmDaemon d;
  const std::int64_t id = d.daemon.Submit(FashionJob(
      "workers = 1\nmode = \"async\"\nservers = 1", 1000,
      "[checkpoint]\nevery_steps = 100\n[restart]\nmax_restarts = 2\n"));
  const json running = d.daemon.WaitForStep(id, 250);
  BOOST_TEST_REQUIRE(running["state"] == "running", running.dump());
  CancelTask(id, 0);  // the replica; its shard goes on
  std::string logs;
  BOOST_TEST(LogsShow(d.daemon, id, "started again alone", &logs), logs);
  const json job = d.daemon.Status(id);
  BOOST_TEST(job["state"] == "running", job.dump());
  BOOST_TEST(job["restarts"] == 1);
  BOOST_TEST(job["slurm"]["job_id"] == running["slurm"]["job_id"]);  // the same allocation
  BOOST_TEST(Eventually([&] { return SqueueShows("dtrain-" + std::to_string(id) + "-rank-0", true); }),
             Squeue(true));
  d.daemon.Request({{"type", "cancel"}, {"id", id}});
  BOOST_TEST(Eventually([&] { return !SqueueShows(AllocationName(id)); }), Squeue());
}

BOOST_AUTO_TEST_CASE(a_preempted_job_says_so_and_resumes_from_its_checkpoint_when_let,
                     *boost::unit_test::precondition(SlurmRuns)) {
  SlurmDaemon d;
  const std::int64_t id = d.daemon.Submit(FashionJob(
      NodeFillingCluster(), 1000, "[checkpoint]\nevery_steps = 100\n[restart]\nmax_restarts = 2\n"));
  BOOST_TEST_REQUIRE(d.daemon.WaitForStep(id, 250)["state"] == "running");
  // A job of the "urgent" partition takes the node: Slurm cancels ours (PreemptMode=CANCEL).
  const ProcessResult urgent = Run({"salloc", "--no-shell", "--partition=urgent",
                                    "--ntasks=" + std::to_string(net::OnlineCores()),
                                    "--job-name=urgent"});
  BOOST_TEST_REQUIRE(urgent.exit_code == 0, urgent.err);
  json job;
  BOOST_TEST(Eventually([&] {
               job = d.daemon.Status(id);
               return job["events"].dump().find("was preempted by Slurm") != std::string::npos;
             }),
             job.dump());
  BOOST_TEST(job["state"] == "recovering", job.dump());
  // Once the node is free again the job resumes from its newest checkpoint.
  BOOST_TEST_REQUIRE(Run({"scancel", "--name=urgent"}).exit_code == 0);
  BOOST_TEST(Eventually([&] {
               job = d.daemon.Status(id);
               return job["state"] == "running" && job["restarts"] == 1;
             }),
             job.dump());
  RequireResumedThenCancel(d.daemon, id);
}

BOOST_AUTO_TEST_CASE(a_job_waits_for_slurm_and_cancelling_it_withdraws_the_request,
                     *boost::unit_test::precondition(SlurmRuns)) {
  SlurmDaemon d;
  // The first job takes the node's cores (this machine's; the test asks for 2 tasks), so Slurm
  // holds the second one's allocation pending.
  const std::int64_t first = d.daemon.Submit(FashionJob(NodeFillingCluster(), 1000));
  BOOST_TEST_REQUIRE(d.daemon.WaitForStep(first, 10)["state"] == "running");
  const std::int64_t second = d.daemon.Submit(FashionJob("workers = 2\nmode = \"sync\"", 1));
  std::string logs;
  BOOST_TEST(LogsShow(d.daemon, second, "waiting for Slurm to grant job", &logs), logs);
  BOOST_TEST(d.daemon.Status(second)["state"] == "starting");
  BOOST_TEST(SqueueShows(AllocationName(second)));
  const json reply = d.daemon.Request({{"type", "cancel"}, {"id", second}});
  BOOST_TEST_REQUIRE(reply["ok"] == true, reply.dump());
  BOOST_TEST(d.daemon.Status(second)["state"] == "cancelled");
  BOOST_TEST(Eventually([&] { return !SqueueShows(AllocationName(second)); }), Squeue());
  d.daemon.Request({{"type", "cancel"}, {"id", first}});
  BOOST_TEST(Eventually([&] { return !SqueueShows(AllocationName(first)); }), Squeue());
}

BOOST_AUTO_TEST_CASE(an_allocation_slurm_refuses_fails_the_job_with_its_reason,
                     *boost::unit_test::precondition(SlurmRuns)) {
  SlurmDaemon d;
  std::string job = FashionJob("workers = 2\nmode = \"sync\"", 1);
  job.replace(job.find("partition = \"debug\""), 19, "partition = \"nosuch\"");
  const json ended = d.daemon.Wait(d.daemon.Submit(job));
  BOOST_TEST(ended["state"] == "failed");
  BOOST_TEST(ended["reason"].get<std::string>().find("Slurm did not grant the job") !=
                 std::string::npos,
             ended.dump());
  // Slurm's own words: "salloc: error: ... Invalid partition name specified".
  BOOST_TEST(ended["reason"].get<std::string>().find("partition") != std::string::npos,
             ended.dump());
}

BOOST_AUTO_TEST_CASE(a_users_job_is_that_users_slurm_job_and_processes,
                     *boost::unit_test::precondition(SlurmRuns)) {
  TestUser user("dtrain-slurm-user");
  SlurmDaemon d;
  TempDir files;
  ::chmod(files.path().c_str(), 0755);
  const std::string job = files.Write("job.toml", FashionJob("workers = 2\nmode = \"sync\"", 1000));
  const ProcessResult submitted =
      RunAs(user.name(), user.name(),
            {d.bins.dtrain, "--socket", d.daemon.socket(), "submit", job, "--no-wait", "--json"},
            files.Path(""));
  BOOST_TEST_REQUIRE(submitted.exit_code == 0, submitted.err);
  const std::int64_t id = json::parse(submitted.out)["id"].get<std::int64_t>();
  const json running = d.daemon.WaitForStep(id, 20);
  BOOST_TEST_REQUIRE(running["state"] == "running", running.dump());
  // Slurm holds it as the user's job (salloc ran as the user) ...
  const std::string shown =
      Run({"scontrol", "--oneliner", "show", "job",
           std::to_string(running["slurm"]["job_id"].get<std::int64_t>())})
          .out;
  BOOST_TEST(shown.find("UserId=" + user.name() + "(" + std::to_string(user.uid()) + ")") !=
                 std::string::npos,
             shown);
  // ... and each task runs with the user's uid, with no token on its command line.
  const std::string pids =
      Run({"pgrep", "-f", "^[^ ]+ worker --job " + std::to_string(id) +
                          " --rank [0-9]+ --connect 127.0.0.1:" + std::to_string(d.port) + "$"})
          .out;  // the tasks, not their sruns, nor another test's workers with the same job id
  int tasks = 0;
  for (std::size_t at = 0; at < pids.size();) {
    const std::size_t end = pids.find('\n', at);
    const std::string pid = pids.substr(at, end - at);
    at = end == std::string::npos ? pids.size() : end + 1;
    if (pid.empty()) continue;
    ++tasks;
    const std::string status = ReadFile("/proc/" + pid + "/status");
    BOOST_TEST(status.find("\nUid:\t" + std::to_string(user.uid()) + "\t") != std::string::npos,
               status);
    std::string cmdline = ReadFile("/proc/" + pid + "/cmdline");
    BOOST_TEST(cmdline.find("token") == std::string::npos);
  }
  BOOST_TEST(tasks == 2);
  d.daemon.Request({{"type", "cancel"}, {"id", id}});
  BOOST_TEST(Eventually([&] { return !SqueueShows(AllocationName(id)); }), Squeue());
}

// The pid of the task (the worker process Slurm started) of rank `rank` of job `id` of daemon
// `d`, or -1 while there is none.
pid_t TaskPid(const SlurmDaemon& d, std::int64_t id, int rank) {
  const std::string out =
      Run({"pgrep", "-f",
           "^[^ ]+ worker --job " + std::to_string(id) + " --rank " + std::to_string(rank) +
               " --connect 127.0.0.1:" + std::to_string(d.port) + "$"})
          .out;
  return out.empty() ? -1 : static_cast<pid_t>(std::stol(out));
}

// An elastic job (workers 2, min_workers 1) asks Slurm for one replica's allocation first and
// gets it while another Slurm job holds the node's other cores; its growth request for the second
// replica waits in Slurm's queue until that job ends, then the replica starts in the allocation
// Slurm granted and joins at a step boundary, the first keeping its process. The job succeeds and
// both allocations end with it. The first replica is stopped (SIGSTOP) from before the holder
// ends until the joiner's task runs, so that the job cannot end before the join, however fast
// this machine trains; its heartbeat_timeout and timeout_seconds outlast that pause.
BOOST_AUTO_TEST_CASE(an_elastic_job_starts_with_min_workers_and_grows_as_slurm_grants_cores,
                     *boost::unit_test::precondition(SlurmRunsOnTwoCores)) {
  SlurmDaemon d;
  HoldAllCoresButOne();
  const std::int64_t id = d.daemon.Submit(
      FashionJob("workers = 2\nmin_workers = 1\nmode = \"sync\"\nheartbeat_timeout = 120\n"
                 "timeout_seconds = 120",
                 10));
  const json small = d.daemon.WaitForStep(id, 20);
  BOOST_TEST_REQUIRE(small["state"] == "running", small.dump() << d.daemon.LogTail(id));
  BOOST_TEST(small["events"].dump().find("started with 1 of 2 workers; the others join as Slurm "
                                         "grants them") != std::string::npos,
             small.dump());
  std::string logs;
  BOOST_TEST(LogsShow(d.daemon, id, "(a further replica)", &logs), logs);
  pid_t first = -1;
  for (const json& w : small["workers"]) {
    if (w["rank"] == 0) first = w["pid"].get<pid_t>();
    BOOST_TEST(w["rank"] == 0, small.dump());  // the second is not started yet
  }
  BOOST_TEST_REQUIRE(first > 0, small.dump());
  const pid_t first_task = TaskPid(d, id, 0);
  BOOST_TEST_REQUIRE(first_task > 0);
  BOOST_TEST_REQUIRE(::kill(first_task, SIGSTOP) == 0);

  BOOST_TEST_REQUIRE(Run({"scancel", "--name=holder"}).exit_code == 0);
  const bool joiner_runs = Eventually([&] { return TaskPid(d, id, 1) > 0; });
  BOOST_TEST_REQUIRE(::kill(first_task, SIGCONT) == 0);
  BOOST_TEST_REQUIRE(joiner_runs, Squeue() << d.daemon.LogTail(id));
  json grown;
  BOOST_TEST_REQUIRE(Eventually([&] {
                       grown = d.daemon.Status(id);
                       return grown["events"].dump().find("worker 1 joined at step ") !=
                              std::string::npos;
                     }),
                     grown.dump() << d.daemon.LogTail(id));
  BOOST_TEST(grown["events"].dump().find(": 2 of 2") != std::string::npos, grown.dump());
  BOOST_TEST(grown["restarts"] == 0);  // growing is no restart
  // Two grants, of two different Slurm jobs: the first allocation and the grown replica's.
  std::vector<std::string> grants;
  for (const json& e : grown["events"]) {
    const std::string reason = e["reason"];
    if (reason.rfind("Slurm job ", 0) == 0 && reason.find(" granted on ") != std::string::npos) {
      grants.push_back(reason.substr(0, reason.find(" granted on ")));
    }
  }
  BOOST_TEST_REQUIRE(grants.size() == 2u, grown.dump());
  BOOST_TEST(grants[0] != grants[1]);
  BOOST_TEST(grown["events"].dump().find(") in " + grants[1] + ": it joins") != std::string::npos,
             grown.dump());

  const json done = d.daemon.Wait(id);
  BOOST_TEST_REQUIRE(done["state"] == "succeeded", done.dump() << d.daemon.LogTail(id));
  BOOST_TEST(done["metrics"]["eval_accuracy"].get<double>() > 0.7);
  for (const json& w : done["workers"]) {
    if (w["rank"] == 0) BOOST_TEST(w["pid"] == first, "the first replica was restarted");
    BOOST_TEST(w["exit_status"] == 0, w.dump());
  }
  BOOST_TEST(done["workers"].size() == 2u, done.dump());
  BOOST_TEST(Eventually([&] { return !SqueueShows(AllocationName(id)); }), Squeue());
}

// The Slurm allocations squeue lists under `name`, one "ID NAME" line each.
int AllocationsNamed(const std::string& name) {
  const std::string jobs = Squeue();
  int count = 0;
  for (std::size_t at = jobs.find(" " + name + "\n"); at != std::string::npos;
       at = jobs.find(" " + name + "\n", at + 1)) {
    ++count;
  }
  return count;
}

// An elastic job of workers = 2 and min_workers = 1 grows at once to two members, the second in
// an allocation of its own; `dtrain status` names both grants. When that replica's task is killed
// the first carries on alone with no replacement (max_restarts = 0: none is left), and the lost
// replica's allocation is given back to Slurm at once, while the job still runs; status still
// names both grants.
BOOST_AUTO_TEST_CASE(a_replica_lost_and_not_replaced_gives_its_allocation_back_at_once,
                     *boost::unit_test::precondition(SlurmRunsOnTwoCores)) {
  SlurmDaemon d;
  const std::int64_t id = d.daemon.Submit(
      FashionJob("workers = 2\nmin_workers = 1\nmode = \"sync\"\nheartbeat_timeout = 120\n"
                 "timeout_seconds = 120",
                 300,  // far more than the test waits: it is cancelled once its checks are done
                 "[restart]\nmax_restarts = 0\n"));
  const auto has = [](const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
  };
  json two;
  for (int i = 0; i < 1200; ++i) {  // a minute at most
    two = d.daemon.Status(id);
    if (has(two["events"].dump(), "worker 1 joined at step ")) break;
    std::this_thread::sleep_for(50ms);
  }
  BOOST_TEST_REQUIRE(has(two["events"].dump(), "worker 1 joined at step "),
                     two.dump() << d.daemon.LogTail(id));
  BOOST_TEST_REQUIRE(two["slurm_grants"].size() == 2u, two.dump());
  const json first = two["slurm_grants"][0], grown = two["slurm_grants"][1];
  BOOST_TEST(first["worker"].is_null(), two.dump());
  BOOST_TEST(grown["worker"] == 1, two.dump());
  BOOST_TEST(first["job_id"] != grown["job_id"], two.dump());
  BOOST_TEST(two["slurm"]["job_id"] == grown["job_id"], two.dump());
  const std::string allocation = std::to_string(grown["job_id"].get<std::int64_t>());
  const std::string line = "slurm     job " + std::to_string(first["job_id"].get<std::int64_t>()) +
                           " on " + net::LocalHostName() + "; job " + allocation + " on " +
                           net::LocalHostName() + " (worker 1)";
  const auto status = [&] {
    return RunProcess(
               {EnvPath("DTRAIN_BIN"), "status", std::to_string(id), "--socket", d.daemon.socket()},
               SlurmCluster::Instance()->dir().Path(""))
        .out;
  };
  BOOST_TEST(has(status(), line), status());
  BOOST_TEST(AllocationsNamed(AllocationName(id)) == 2, Squeue());

  const pid_t task = TaskPid(d, id, 1);
  BOOST_TEST_REQUIRE(task > 0, Squeue());
  BOOST_TEST_REQUIRE(::kill(task, SIGKILL) == 0);
  const std::string released = "Slurm job " + allocation + " released: worker 1 is not replaced";
  json after;
  BOOST_TEST(Eventually([&] {
               after = d.daemon.Status(id);
               return has(after["events"].dump(), released);
             }),
             after.dump() << d.daemon.LogTail(id));
  BOOST_TEST(Eventually([&] { return AllocationsNamed(AllocationName(id)) == 1; }), Squeue());
  after = d.daemon.Status(id);
  BOOST_TEST(after["state"] == "running", after.dump() << d.daemon.LogTail(id));
  BOOST_TEST(has(after["events"].dump(), "worker 1 lost at step "), after.dump());
  BOOST_TEST(!has(after["events"].dump(), "started again"), after.dump());
  BOOST_TEST(has(status(), line), status());  // a released grant is still the attempt's

  d.daemon.Request({{"type", "cancel"}, {"id", id}});
  BOOST_TEST(Eventually([&] { return !SqueueShows(AllocationName(id)); }), Squeue());
}

// An elastic job whose growth Slurm never grants (another job holds the cores throughout) ends
// with the replicas it has, and its pending request ends with it.
BOOST_AUTO_TEST_CASE(a_growth_slurm_never_grants_blocks_nothing_and_ends_with_the_job,
                     *boost::unit_test::precondition(SlurmRunsOnTwoCores)) {
  SlurmDaemon d;
  HoldAllCoresButOne();
  const std::int64_t id =
      d.daemon.Submit(FashionJob("workers = 2\nmin_workers = 1\nmode = \"sync\"", 1));
  std::string logs;
  BOOST_TEST(LogsShow(d.daemon, id, "(a further replica)", &logs), logs);
  const json done = d.daemon.Wait(id);
  BOOST_TEST_REQUIRE(done["state"] == "succeeded", done.dump() << d.daemon.LogTail(id));
  BOOST_TEST(done["workers"].size() == 1u, done.dump());
  BOOST_TEST(done["events"].dump().find(" joined at step ") == std::string::npos, done.dump());
  // Neither the first allocation nor the pending request outlives the job.
  BOOST_TEST(Eventually([&] { return !SqueueShows(AllocationName(id)); }), Squeue());
  BOOST_TEST_REQUIRE(Run({"scancel", "--name=holder"}).exit_code == 0);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace slurm_test
}  // namespace dtrain::testing
