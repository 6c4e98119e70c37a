// End to end through the real binary: dtrain run (JSON summary, store contents, exit codes, a
// diverged job failed, or its loss as what it is, in every mode),
// resume after SIGKILL and after SIGINT (bit-identical to an uninterrupted run), and
// export -> predict/eval (predictions equal the in-memory model's).
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "cmd/run_checks.h"
#include "common/idx_files.h"
#include "common/process.h"
#include "common/temp_dir.h"
#include "config/job_file.h"
#include "core/model/model.h"
#include "daemon/runner/job_data.h"
#include "daemon/store/store.h"

namespace dtrain::cli {
namespace run_test {

using namespace run_checks;
using dtrain::testing::ProcessResult;
using dtrain::testing::RunProcess;
using dtrain::testing::StartProcess;
using dtrain::testing::TempDir;

// 20000 rows of 4 blobs in 128 features through a 256x256 MLP: 313 steps an epoch, about a
// second for 6 epochs on a 2-core VM (less on a faster CPU), at `schedule`.
std::string LongJob(int epochs, const std::string& schedule) {
  return R"(name = "blobs-long"
[data]
format = "synthetic"
synthetic = "blobs"
rows = 20000
test_rows = 2000
features = 128
classes = 4
noise = 6.0
[model]
type = "mlp"
hidden = [256, 256]
activation = "relu"
[train]
epochs = )" + std::to_string(epochs) +
         R"(
batch_size = 64
seed = 3
[optimizer]
type = "adam"
lr = 0.001
schedule = ")" + schedule +
         R"("
warmup_steps = 50
[checkpoint]
every_steps = 100
keep = 2
)";
}

// A job that a signal interrupts must still be far from its end when the signal comes, however
// fast the CPU and however late the test gets to send it: 1000 epochs (minutes anywhere). Its
// rate is constant, so the runs compared may stop at a train.steps chosen after the signal
// (nothing before that step depends on where the run ends).
const std::string kEndlessJob = LongJob(1000, "constant");

// How the quick jobs train: a few seconds, a checkpoint every 40 steps.
constexpr const char* kQuickTraining = R"([train]
epochs = 3
batch_size = 32
seed = 9
[optimizer]
type = "momentum"
lr = 0.05
[checkpoint]
every_steps = 40
)";

// The quick jobs' data: 2000 + 500 rows of 3 noisy blobs with `features` features.
std::string QuickBlobs(int features) {
  return R"([data]
format = "synthetic"
synthetic = "blobs"
rows = 2000
test_rows = 500
features = )" +
         std::to_string(features) +
         R"(
classes = 3
noise = 1.5
)";
}

const std::string kQuickJob = "name = \"blobs-quick\"\n" + QuickBlobs(6) + R"([model]
type = "mlp"
hidden = [16]
activation = "tanh"
)" + std::string(kQuickTraining);

BOOST_AUTO_TEST_SUITE(run_end_to_end)

BOOST_AUTO_TEST_CASE(json_summary_and_what_the_store_holds) {
  TempDir dir;
  const std::string job = dir.Write("job.toml", kQuickJob);
  const std::string db = dir.Path("runs.db");
  const ProcessResult r = RunProcess({Bin(), "run", job, "--db", db, "--json"}, dir.Path(""));
  BOOST_TEST(r.exit_code == 0, r.err);
  const nlohmann::json summary = ParseJson(r);
  BOOST_TEST(summary["job"].get<int>() == 1);
  BOOST_TEST(summary["state"].get<std::string>() == "succeeded");
  BOOST_TEST(summary["steps"].get<int>() == 3 * 63);  // ceil(2000 / 32) per epoch
  BOOST_TEST(summary["seconds"].get<double>() > 0.0);
  BOOST_TEST(summary["db"].get<std::string>() == db);
  BOOST_TEST(summary["metrics"]["accuracy"].get<double>() > 0.8);
  BOOST_TEST(summary["metrics"].contains("loss"));
  BOOST_TEST(!summary["metrics"].contains("mse"));

  auto s = OpenStore(db);
  auto record = s->GetJob(1);
  BOOST_REQUIRE(record.ok());
  BOOST_TEST(record.value().name == "blobs-quick");
  BOOST_TEST(record.value().spec_toml.find("[optimizer]") != std::string::npos);
  auto events = s->Events(1);
  BOOST_REQUIRE(events.ok());
  std::vector<std::string> states;
  for (const auto& e : events.value()) states.emplace_back(store::JobStateName(e.to));
  BOOST_TEST((states == std::vector<std::string>{"queued", "starting", "running", "succeeded"}));
  auto accuracy = s->Metrics(1, "eval_accuracy");
  BOOST_REQUIRE(accuracy.ok());
  BOOST_TEST(accuracy.value().size() == 3u);  // once per epoch
  BOOST_TEST(accuracy.value().back().value == summary["metrics"]["accuracy"].get<double>(),
             boost::test_tools::tolerance(1e-12));
  auto checkpoints = s->Checkpoints(1);
  BOOST_REQUIRE(checkpoints.ok());
  BOOST_TEST(checkpoints.value().back().step == 189);  // the end is always checkpointed
  auto workers = s->Workers(1);
  BOOST_REQUIRE(workers.ok());
  BOOST_REQUIRE(workers.value().size() == 1u);
  BOOST_TEST((workers.value()[0].state == store::WorkerState::kExited));

  const ProcessResult csv = RunProcess(
      {Bin(), "metrics", "1", "--db", db, "--name", "eval", "--format", "csv"}, dir.Path(""));
  BOOST_TEST(csv.exit_code == 0);
  BOOST_TEST(csv.out.rfind("step,epoch,worker,name,value,time\n", 0) == 0u);
  BOOST_TEST(csv.out.find("eval_accuracy") != std::string::npos);
  BOOST_TEST(csv.out.find("train_loss") == std::string::npos);
}

// A model that diverges (linear regression at lr = 5), in every mode: by default the job fails,
// its reason naming the metric and the step (and is not restarted); with train.on_divergence =
// "continue" it ends, and its loss reads back as NaN (infinite on the way where a logged step
// overflowed: "inf") in the store, in `metrics --format json` and in the summary, never as 0
// (several processes sent NaN up their channels as JSON null, which was read as 0).
BOOST_AUTO_TEST_CASE(a_diverged_job_fails_or_its_loss_reads_back_as_nan_in_every_mode) {
  const std::string example =
      (std::filesystem::path(std::getenv("DTRAIN_SOURCE_DIR")) / "examples/linear-regression.toml")
          .string();
  const std::vector<std::vector<std::string>> modes = {
      {},
      {"--set", "cluster.workers=2", "--set", "cluster.mode=sync"},
      {"--set", "cluster.workers=2", "--set", "cluster.mode=sync", "--set",
       "cluster.allreduce=ps", "--set", "cluster.servers=1"},
      {"--set", "cluster.workers=2", "--set", "cluster.mode=async", "--set", "cluster.servers=1"},
      {"--set", "cluster.workers=2", "--set", "cluster.mode=local"}};
  for (const std::vector<std::string>& mode : modes) {
    const std::string name = mode.empty() ? "single" : mode[3];
    const auto run = [&](const TempDir& dir, const std::string& on_divergence) {
      std::vector<std::string> argv = {Bin(), "run", example, "--db", dir.Path("runs.db"),
                                       "--json", "--set", "optimizer.lr=5", "--set",
                                       "train.log_every=10", "--set",
                                       "train.on_divergence=" + on_divergence};
      argv.insert(argv.end(), mode.begin(), mode.end());
      return RunProcess(argv, dir.Path(""));
    };
    BOOST_TEST_CONTEXT(name) {
      TempDir failing;
      const ProcessResult failed = run(failing, "fail");
      BOOST_TEST(failed.exit_code == 1, failed.err);
      const nlohmann::json verdict = ParseJson(failed);
      BOOST_TEST(verdict["state"] == "failed");
      const std::string reason = verdict["reason"].get<std::string>();
      BOOST_TEST(reason.find("diverged: train_loss became ") != std::string::npos, reason);
      BOOST_TEST(reason.find(" at step ") != std::string::npos, reason);  // inf or nan, by mode
      BOOST_TEST(reason.find("gave up after") == std::string::npos, reason);  // no restarts

      TempDir dir;
      const ProcessResult r = run(dir, "continue");
      const nlohmann::json summary = ParseJson(r);
      BOOST_TEST(summary["state"] == "succeeded", summary.dump());
      BOOST_TEST(summary["metrics"]["loss"].is_null(), summary.dump());  // NaN
      auto s = OpenStore(dir.Path("runs.db"));
      auto losses = s->Metrics(1, "train_loss");
      BOOST_REQUIRE(losses.ok());
      BOOST_REQUIRE(!losses.value().empty());
      for (const store::MetricRow& m : losses.value()) {
        BOOST_TEST(m.value != 0.0, "step " << m.step);
      }
      BOOST_TEST(std::isnan(losses.value().back().value));
      const ProcessResult json = RunProcess({Bin(), "metrics", "1", "--db", dir.Path("runs.db"),
                                             "--name", "train_loss", "--format", "json"},
                                            dir.Path(""));
      BOOST_TEST(json.out.find("\"value\":null") != std::string::npos);
      // Every point as the store holds it: NaN null, the infinities "inf" and "-inf".
      const nlohmann::json points = ParseJson(json);
      BOOST_REQUIRE(points.size() == losses.value().size());
      for (std::size_t i = 0; i < points.size(); ++i) {
        const double stored = losses.value()[i].value;
        const nlohmann::json& shown = points[i]["value"];
        BOOST_TEST((std::isnan(stored) ? shown.is_null()
                    : std::isinf(stored) ? shown == (stored > 0 ? "inf" : "-inf")
                                         : shown == stored),
                   shown.dump() << " for " << stored);
      }
    }
  }
}

// list, status and logs read a store file as metrics does: `logs -f --db` follows a run that is
// writing the file until it ends.
BOOST_AUTO_TEST_CASE(list_status_and_logs_read_a_store_file_and_logs_follows_a_live_run) {
  const auto Contains = [](const std::string& text, const char* part) {
    return text.find(part) != std::string::npos;
  };
  TempDir dir;
  // A few seconds: logs -f starts while it runs (on a CPU fast enough to end it first, logs -f
  // prints what it wrote and the checks below still hold).
  const std::string job = dir.Write("job.toml", LongJob(18, "cosine"));
  const std::string db = dir.Path("runs.db");
  dtrain::testing::ChildProcess run = StartProcess({Bin(), "run", job, "--db", db}, dir.Path(""));
  std::string state;
  for (int i = 0; i < 600 && state != "running" && state != "succeeded"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    const ProcessResult s = RunProcess({Bin(), "status", "1", "--db", db, "--json"}, dir.Path(""));
    if (s.exit_code == 0) state = nlohmann::json::parse(s.out)["state"].get<std::string>();
  }
  BOOST_REQUIRE_MESSAGE(state == "running" || state == "succeeded", "state " << state);
  const ProcessResult follow =
      RunProcess({Bin(), "logs", "1", "-f", "--db", db}, dir.Path(""));  // until the run ends
  const ProcessResult ran = run.Wait();
  BOOST_TEST(ran.exit_code == 0, ran.err);
  BOOST_TEST(Contains(ran.out, "job 1 (blobs-long) succeeded after "), ran.out);
  BOOST_TEST(Contains(ran.out, " s: completed 5634 steps\n"), ran.out);
  BOOST_TEST(follow.exit_code == 0, follow.err);
  BOOST_TEST(Contains(follow.out, "completed 5634 steps"), follow.out);  // the run's last line

  const ProcessResult status = RunProcess({Bin(), "status", "1", "--db", db, "--json"}, dir.Path(""));
  BOOST_REQUIRE(status.exit_code == 0);
  const nlohmann::json object = nlohmann::json::parse(status.out);
  BOOST_TEST(object["state"] == "succeeded");
  BOOST_TEST(object["name"] == "blobs-long");
  BOOST_TEST(object["step"] == 5634);
  BOOST_TEST(object["workers"].size() == 1u);
  BOOST_TEST(object["events"].back()["to"] == "succeeded");
  const ProcessResult listed = RunProcess({Bin(), "list", "--db", db, "--json"}, dir.Path(""));
  BOOST_REQUIRE(listed.exit_code == 0);
  const nlohmann::json jobs = nlohmann::json::parse(listed.out);
  BOOST_REQUIRE(jobs.size() == 1u);
  BOOST_TEST(jobs[0]["id"] == 1);
  BOOST_TEST(jobs[0]["state"] == "succeeded");
  const ProcessResult none =
      RunProcess({Bin(), "list", "--db", db, "--state", "failed"}, dir.Path(""));
  BOOST_TEST(none.exit_code == 0);
  BOOST_TEST(Contains(none.err, "no jobs in state failed"), none.err);
  const ProcessResult table = RunProcess({Bin(), "status", "--db", db}, dir.Path(""));
  BOOST_TEST(Contains(table.out, "blobs-long"), table.out);
}

BOOST_AUTO_TEST_CASE(an_invalid_job_file_exits_2_naming_file_line_and_key) {
  TempDir dir;
  const std::string job = dir.Write("bad.toml", "name = \"x\"\n[train]\nbatch_sise = 64\n");
  for (const char* command : {"validate", "run"}) {
    BOOST_TEST_CONTEXT(command) {
      const ProcessResult r =
          RunProcess({Bin(), command, job, "--db", dir.Path("x.db")}, dir.Path(""));
      if (std::string(command) == "validate") continue;  // validate has no --db: usage error
      BOOST_TEST(r.exit_code == 2);
      BOOST_TEST(r.err.find("bad.toml:3:1: train.batch_sise") != std::string::npos, r.err);
      BOOST_TEST(r.err.find("did you mean 'batch_size'") != std::string::npos, r.err);
    }
  }
  const ProcessResult v = RunProcess({Bin(), "validate", job}, dir.Path(""));
  BOOST_TEST(v.exit_code == 2);
  BOOST_TEST(v.err.find("bad.toml:3:1") != std::string::npos, v.err);
  const ProcessResult ok =
      RunProcess({Bin(), "validate", dir.Write("ok.toml", kQuickJob), "--set", "train.epochs=7"},
                 dir.Path(""));
  BOOST_TEST(ok.exit_code == 0, ok.err);
  BOOST_TEST(ok.out.find("epochs = 7") != std::string::npos, ok.out);
}

BOOST_AUTO_TEST_CASE(a_job_for_slurm_is_refused_by_run_and_pointed_at_submit) {
  TempDir dir;
  const std::string job = dir.Write(
      "slurm.toml", std::string(kQuickJob) + "\n[cluster]\nscheduler = \"slurm\"\n");
  const ProcessResult r = RunProcess({Bin(), "run", job, "--db", dir.Path("x.db")}, dir.Path(""));
  BOOST_TEST(r.exit_code == 2);
  BOOST_TEST(r.err.find("dtrain submit") != std::string::npos, r.err);
  const ProcessResult here = RunProcess(
      {Bin(), "run", job, "--db", dir.Path("x.db"), "--set", "cluster.scheduler=daemon"},
      dir.Path(""));
  BOOST_TEST(here.exit_code == 0, here.err);
  // validate says what each attempt asks Slurm for.
  const ProcessResult v = RunProcess({Bin(), "validate", job}, dir.Path(""));
  BOOST_TEST(v.exit_code == 0, v.err);
  BOOST_TEST(v.out.find("# Slurm: each attempt is salloc --no-shell --job-name=dtrain-NODE-JOB "
                        "--ntasks=1 --cpus-per-task=1, then one srun step per process") !=
                 std::string::npos,
             v.out);
  // An elastic one: its first allocation holds min_workers replicas, each further one its own.
  const std::string elastic =
      dir.Write("elastic.toml", std::string(kQuickJob) +
                                    "\n[cluster]\nscheduler = \"slurm\"\nmode = "
                                    "\"sync\"\nworkers = 3\nmin_workers = 1\n");
  const ProcessResult e = RunProcess({Bin(), "validate", elastic}, dir.Path(""));
  BOOST_TEST(e.exit_code == 0, e.err);
  BOOST_TEST(
      e.out.find("--ntasks=1 --cpus-per-task=1, then one srun step per process; each "
                 "further replica, up to 3, is salloc --no-shell "
                 "--job-name=dtrain-NODE-JOB --ntasks=1 --cpus-per-task=1\n") != std::string::npos,
      e.out);
}

BOOST_AUTO_TEST_CASE(a_model_too_large_for_the_host_is_refused_with_its_size) {
  TempDir dir;
  const std::string job = dir.Write("huge.toml",
                                    "[data]\nformat = \"synthetic\"\n[model]\n"
                                    "type = \"mlp\"\nhidden = [1000000, 1000000]\n"
                                    "[train]\nepochs = 1\n");
  for (const char* command : {"validate", "run"}) {
    const ProcessResult r = RunProcess({Bin(), command, job}, dir.Path(""));
    BOOST_TEST(r.exit_code == 2, command << ": " << r.err);
    BOOST_TEST(r.err.find("huge.toml:5:10: model.hidden: the model needs at least 10.9 TiB") !=
                   std::string::npos,
               r.err);
    BOOST_TEST(r.err.find("more than this host's memory") != std::string::npos, r.err);
  }
}

BOOST_AUTO_TEST_CASE(running_out_of_memory_limit_fails_the_job_saying_where) {
  TempDir dir;
  // 10M rows of 64 features: 2.4 GiB of data under a 1 GiB limit. The model itself fits.
  const std::string job = dir.Write("oom.toml",
                                    "[data]\nformat = \"synthetic\"\nrows = 10000000\n"
                                    "features = 64\n[train]\nepochs = 1\nthreads = 1\n"
                                    "memory_limit = \"1GiB\"\n");
  BOOST_TEST(RunProcess({Bin(), "validate", job}, dir.Path("")).exit_code == 0);
  const ProcessResult r = RunProcess({Bin(), "run", job, "--db", dir.Path("oom.db")}, dir.Path(""));
  BOOST_TEST(r.exit_code == 1, r.err);
  BOOST_TEST(r.out.find("failed after ") != std::string::npos, r.out);
  BOOST_TEST(r.out.find(" s: out of memory while reading the job's data (this process may use "
                        "1 GiB: [train] memory_limit)") != std::string::npos,
             r.out << r.err);
  // It failed before its first checkpoint: there is no model to export.
  BOOST_TEST(r.out.find("model: none (no checkpoint was taken)") != std::string::npos, r.out);
  BOOST_TEST(r.out.find("dtrain export") == std::string::npos, r.out);
}

BOOST_AUTO_TEST_CASE(an_inherited_limit_too_small_for_blas_fails_instead_of_hanging) {
  TempDir dir;
  // OpenBLAS retries forever for a buffer it cannot have: the run must refuse first.
  const std::string job = dir.Write("small.toml", kQuickJob);
  const ProcessResult r =
      RunProcess({"/usr/bin/timeout", "-s", "KILL", "60", "/usr/bin/prlimit", "--as=209715200",
                  Bin(), "run", job, "--db", dir.Path("small.db")},
                 dir.Path(""));
  BOOST_TEST(r.exit_code == 1, r.out << r.err);
  BOOST_TEST(r.out.find("this process's address-space limit (ulimit -v) is 200 MiB, but this "
                        "process needs at least") != std::string::npos,
             r.out << r.err);
}

// The straight run and the resumed one both end at a train.steps set on their command lines.
BOOST_AUTO_TEST_CASE(resume_after_sigkill_ends_bit_identical_to_an_uninterrupted_run) {
  TempDir dir;
  const std::string job = dir.Write("job.toml", kEndlessJob);
  const std::string db = dir.Path("killed.db");
  auto child = StartProcess({Bin(), "run", job, "--db", db}, dir.Path(""));
  WaitForCheckpoint(db, 1, 300);
  child.Signal(SIGKILL);
  const ProcessResult killed = child.Wait();
  BOOST_REQUIRE_MESSAGE(killed.signal == SIGKILL, "the run ended before it could be killed");
  {
    auto s = OpenStore(db);
    BOOST_TEST((s->GetJob(1).value().state == store::JobState::kRunning));  // left behind
  }
  const std::int64_t end = Final(db, 1).step + 300;
  const std::string until = "train.steps=" + std::to_string(end);

  const std::string straight_db = dir.Path("straight.db");
  const ProcessResult straight = RunProcess(
      {Bin(), "run", job, "--db", straight_db, "--json", "--set", until}, dir.Path(""));
  BOOST_REQUIRE_MESSAGE(straight.exit_code == 0, straight.err);
  const ProcessResult resumed = RunProcess(
      {Bin(), "run", "--resume", "1", "--db", db, "--json", "--set", until}, dir.Path(""));
  BOOST_REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.err);
  const nlohmann::json summary = ParseJson(resumed);
  BOOST_TEST(summary["state"].get<std::string>() == "succeeded");
  BOOST_TEST(summary["resumed_from"].get<int>() >= 300);
  BOOST_TEST(summary["steps"].get<std::int64_t>() == end);
  BOOST_TEST(SameState(Final(straight_db, 1), Final(db, 1)),
             "resumed parameters differ from the uninterrupted run's");

  auto s = OpenStore(db);
  auto events = s->Events(1);
  BOOST_REQUIRE(events.ok());
  bool recovered = false;
  for (const auto& e : events.value()) recovered |= e.to == store::JobState::kRecovering;
  BOOST_TEST(recovered);
  auto workers = s->Workers(1);
  BOOST_REQUIRE(workers.ok() && workers.value().size() == 2u);
  BOOST_TEST((workers.value()[0].state == store::WorkerState::kKilled));
}

// SIGINT checkpoints where the run stands. `run JOB_FILE --resume` finds the job by its file (and
// is interrupted in turn); `--resume ID --set train.steps=` ends it where a straight run ends.
BOOST_AUTO_TEST_CASE(sigint_checkpoints_exits_130_and_resumes_identically) {
  TempDir dir;
  const std::string job = dir.Write("job.toml", kEndlessJob);
  const std::string db = dir.Path("interrupted.db");
  const auto interrupt = [&](const std::vector<std::string>& argv, std::int64_t past) {
    auto child = StartProcess(argv, dir.Path(""));
    WaitForCheckpoint(db, 1, past);
    child.Signal(SIGINT);
    const ProcessResult interrupted = child.Wait();
    BOOST_REQUIRE_MESSAGE(interrupted.exit_code == 130, interrupted.err);
    const nlohmann::json summary = ParseJson(interrupted);
    BOOST_TEST(summary["state"].get<std::string>() == "cancelled");
    const std::int64_t stopped_at = summary["steps"].get<std::int64_t>();
    BOOST_TEST(Final(db, 1).step == stopped_at);  // checkpoint written at the stop
    // The job's step is where it stopped, not its last logged step.
    const ProcessResult status =
        RunProcess({Bin(), "status", "1", "--db", db, "--json"}, dir.Path(""));
    BOOST_TEST(ParseJson(status)["step"].get<std::int64_t>() == stopped_at, status.out);
    return summary;
  };
  const std::int64_t first_stop =
      interrupt({Bin(), "run", job, "--db", db, "--json"}, 200)["steps"].get<std::int64_t>();

  // --resume with no value finds the job by its job file.
  const nlohmann::json second =
      interrupt({Bin(), "run", job, "--resume", "--db", db, "--json"}, first_stop + 100);
  BOOST_TEST(second["resumed_from"].get<std::int64_t>() == first_stop);

  const std::int64_t end = second["steps"].get<std::int64_t>() + 300;
  const std::string until = "train.steps=" + std::to_string(end);
  const std::string straight_db = dir.Path("straight.db");
  BOOST_REQUIRE(
      RunProcess({Bin(), "run", job, "--db", straight_db, "--set", until}, dir.Path("")).exit_code ==
      0);
  const ProcessResult resumed = RunProcess(
      {Bin(), "run", "--resume", "1", "--db", db, "--json", "--set", until}, dir.Path(""));
  BOOST_REQUIRE_MESSAGE(resumed.exit_code == 0, resumed.err);
  BOOST_TEST(ParseJson(resumed)["resumed_from"].get<std::int64_t>() ==
             second["steps"].get<std::int64_t>());
  BOOST_TEST(SameState(Final(straight_db, 1), Final(db, 1)));

  // A succeeded job is not run again.
  const ProcessResult again = RunProcess({Bin(), "run", "--resume", "1", "--db", db}, dir.Path(""));
  BOOST_TEST(again.exit_code == 1);
  BOOST_TEST(again.err.find("already succeeded") != std::string::npos, again.err);
}

// A small convolutional network on the quick job's blobs seen as 6x6 images, with batchnorm,
// dropout and augmentation: the layer list goes through run, export, predict and eval as any
// model does (prediction normalises by the running statistics the checkpoint holds).
const std::string kQuickCnnJob = "name = \"blobs-cnn\"\n" + QuickBlobs(36) + R"(augment_flip = true
[model]
type = "sequential"
input_shape = [1, 6, 6]
[[model.layers]]
type = "conv2d"
filters = 4
kernel = 3
padding = "same"
[[model.layers]]
type = "batchnorm"
[[model.layers]]
type = "relu"
[[model.layers]]
type = "maxpool2d"
[[model.layers]]
type = "dropout"
rate = 0.2
[[model.layers]]
type = "dense"
)" + std::string(kQuickTraining);

// Trains `job_text` through dtrain run, exports the model and checks that predict and eval give
// what the checkpoint's parameters give in this process, and what the run reported.
void CheckExportThenPredict(const std::string& job_text) {
  TempDir dir;
  const std::string job = dir.Write("job.toml", job_text);
  const std::string db = dir.Path("runs.db");
  const ProcessResult ran = RunProcess({Bin(), "run", job, "--db", db, "--json"}, dir.Path(""));
  BOOST_REQUIRE_MESSAGE(ran.exit_code == 0, ran.err);
  const nlohmann::json reported = ParseJson(ran)["metrics"];
  const std::string model_path = dir.Path("model.dtm");
  const ProcessResult exported =
      RunProcess({Bin(), "export", "1", "--db", db, "-o", model_path}, dir.Path(""));
  BOOST_REQUIRE_MESSAGE(exported.exit_code == 0, exported.err);

  const ProcessResult predicted =
      RunProcess({Bin(), "predict", model_path, job, "--json"}, dir.Path(""));
  BOOST_REQUIRE_MESSAGE(predicted.exit_code == 0, predicted.err);
  const nlohmann::json classes = ParseJson(predicted)["predictions"];
  BOOST_TEST(std::all_of(classes.begin(), classes.end(),
                         [](const nlohmann::json& c) { return c.is_number_integer(); }));
  const auto predictions = classes.get<std::vector<float>>();
  // --proba: a probability per class, summing to 1, the largest the predicted class's.
  const ProcessResult proba =
      RunProcess({Bin(), "predict", model_path, job, "--json", "--proba"}, dir.Path(""));
  BOOST_REQUIRE_MESSAGE(proba.exit_code == 0, proba.err);
  const auto probabilities =
      ParseJson(proba)["probabilities"].get<std::vector<std::vector<float>>>();
  BOOST_REQUIRE(probabilities.size() == predictions.size());
  for (std::size_t r = 0; r < probabilities.size(); ++r) {
    const std::vector<float>& p = probabilities[r];
    BOOST_REQUIRE(p.size() == 3u);
    BOOST_TEST(p[0] + p[1] + p[2] == 1.0f, boost::test_tools::tolerance(1e-5f));
    const auto largest = static_cast<float>(std::max_element(p.begin(), p.end()) - p.begin());
    BOOST_TEST(largest == predictions[r]);
  }

  // The same predictions from the checkpoint's parameters, computed here.
  config::LoadResult loaded = config::LoadJobFile(job, {});
  BOOST_REQUIRE(loaded.ok());
  auto data = runner::LoadJobData(*loaded.job);
  BOOST_REQUIRE(data.ok());
  const store::CheckpointData final = Final(db, 1);
  model::Model model(data.value().spec);
  const data::Dataset& test = data.value().eval;
  BOOST_REQUIRE(predictions.size() == test.rows);
  model::Workspace ws(model, static_cast<int>(test.rows));
  std::vector<std::uint32_t> all(test.rows);
  for (std::uint32_t i = 0; i < test.rows; ++i) all[i] = i;
  math::FloatBuffer x(test.rows * test.features);
  std::vector<float> y(test.rows);
  data::GatherBatch(test, data.value().scaling, all, x.data(), y.data());
  const float* out = model.Forward(final.params.data(), x.data(), static_cast<int>(test.rows), ws);
  long correct = 0;
  for (std::size_t r = 0; r < test.rows; ++r) {
    const float* row = out + r * 3;
    const auto expected = static_cast<float>(std::max_element(row, row + 3) - row);
    BOOST_TEST(predictions[r] == expected);
    correct += expected == y[r];
  }

  BOOST_TEST(static_cast<double>(correct) > 0.8 * static_cast<double>(test.rows));  // it learnt
  // Batchnorm's running statistics are a replica's, not the initial means 0 and variances 1
  // (which parameter servers hold).
  for (const model::ParamRange& r : model.StatisticRanges()) {
    const auto begin = final.params.begin() + static_cast<std::ptrdiff_t>(r.offset);
    const auto initial = [](float v) { return v == 0.0f || v == 1.0f; };
    BOOST_TEST(std::none_of(begin, begin + static_cast<std::ptrdiff_t>(r.count), initial));
  }

  const ProcessResult evaluated =
      RunProcess({Bin(), "eval", model_path, job, "--json"}, dir.Path(""));
  BOOST_REQUIRE(evaluated.exit_code == 0);
  const nlohmann::json eval = ParseJson(evaluated);
  BOOST_TEST(eval["accuracy"].get<double>() ==
             static_cast<double>(correct) / static_cast<double>(test.rows));
  BOOST_TEST(eval["rows"].get<std::size_t>() == test.rows);
  // The job's result is the model it hands out (in async mode rank 0 used to report its own
  // replica's last parameters).
  BOOST_TEST(eval["accuracy"].get<double>() == reported["accuracy"].get<double>());
  BOOST_TEST(eval["loss"].get<double>() == reported["loss"].get<double>(),
             boost::test_tools::tolerance(1e-5));

  // A damaged model file is refused with a clear error.
  std::string bytes = dtrain::testing::ReadFile(model_path);
  bytes[bytes.size() / 2] ^= 0x40;
  const std::string damaged = dir.Write("damaged.dtm", bytes);
  const ProcessResult refused = RunProcess({Bin(), "eval", damaged, job}, dir.Path(""));
  BOOST_TEST(refused.exit_code == 2);
  BOOST_TEST(refused.err.find("checksum mismatch") != std::string::npos, refused.err);
}

BOOST_AUTO_TEST_CASE(export_then_predict_matches_the_in_memory_model) {
  CheckExportThenPredict(kQuickJob);
}

BOOST_AUTO_TEST_CASE(a_layer_list_model_exports_predicts_and_evaluates_the_same) {
  CheckExportThenPredict(kQuickCnnJob);
}

// The lines of a job of several workers carry their rank as `dtrain logs` writes it.
BOOST_AUTO_TEST_CASE(a_run_of_several_workers_prefixes_lines_as_logs_does) {
  TempDir dir;
  const std::string job = dir.Write(
      "job.toml", kQuickJob + "[cluster]\nworkers = 2\nmode = \"sync\"\n");
  const ProcessResult r = RunProcess({Bin(), "run", job, "--db", dir.Path("runs.db")}, dir.Path(""));
  BOOST_TEST(r.exit_code == 0, r.err);
  BOOST_TEST(("\n" + r.out).find("\nr0: training: ") != std::string::npos, r.out);
  BOOST_TEST(r.out.find("[0]") == std::string::npos, r.out);

  // Its metrics plot once per metric, the workers' mean, unless each worker is asked for.
  const auto plot = [&](std::vector<std::string> extra) {
    std::vector<std::string> argv = {Bin(), "metrics", "1", "--db", dir.Path("runs.db"),
                                     "--plot", "--name", "train_loss"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return RunProcess(argv, dir.Path("")).out;
  };
  const auto count = [](const std::string& text, const std::string& part) {
    std::size_t n = 0;
    for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) {
      ++n;
    }
    return n;
  };
  const std::string mean = plot({});
  BOOST_TEST(count(mean, "train_loss (mean of 2 workers):") == 1u, mean);
  BOOST_TEST(count(mean, "(worker ") == 0u, mean);
  const std::string each = plot({"--per-worker"});
  BOOST_TEST(count(each, "train_loss (worker 0):") == 1u, each);
  BOOST_TEST(count(each, "train_loss (worker 1):") == 1u, each);
}

// A run whose loss diverges to NaN, told to train on (train.on_divergence = "continue"; by
// default it fails: a_diverged_job_fails_…), records it and ends as any run does (its NaN metrics
// once failed to store and left the job 'running').
BOOST_AUTO_TEST_CASE(a_run_whose_loss_goes_nan_records_it_and_ends) {
  TempDir dir;
  const std::string job = dir.Write("job.toml", kQuickJob);
  const std::string db = dir.Path("runs.db");
  const ProcessResult r = RunProcess(
      {Bin(), "run", job, "--db", db, "--set", "optimizer.lr=1000", "--set", "data.noise=5",
       "--set", "model.activation=\"relu\"", "--set", "train.on_divergence=continue"},
      dir.Path(""));
  BOOST_TEST(r.exit_code == 0, r.err);
  const ProcessResult status = RunProcess({Bin(), "status", "1", "--db", db, "--json"}, dir.Path(""));
  const nlohmann::json object = ParseJson(status);
  BOOST_TEST(object["state"] == "succeeded");
  BOOST_TEST(object["metrics"]["train_loss"].is_null(), status.out);  // NaN travels as null
  const ProcessResult csv = RunProcess(
      {Bin(), "metrics", "1", "--db", db, "--name", "train_loss", "--format", "csv"}, dir.Path(""));
  BOOST_TEST(csv.out.find(",train_loss,nan,") != std::string::npos, csv.out);

  // dtrain why names the first non-finite loss (of any loss metric, by step) as the first cause.
  const ProcessResult losses = RunProcess(
      {Bin(), "metrics", "1", "--db", db, "--name", "loss", "--format", "json"}, dir.Path(""));
  std::int64_t nan_step = -1;
  std::string nan_name;
  for (const nlohmann::json& point : ParseJson(losses)) {
    if (point["value"].is_null() && (nan_step < 0 || point["step"].get<std::int64_t>() < nan_step)) {
      nan_step = point["step"].get<std::int64_t>();
      nan_name = point["name"].get<std::string>();
    }
  }
  BOOST_REQUIRE(nan_step >= 0);
  const ProcessResult why = RunProcess({Bin(), "why", "1", "--db", db, "--json"}, dir.Path(""));
  BOOST_REQUIRE_MESSAGE(why.exit_code == 0, why.err);
  const nlohmann::json diagnosis = ParseJson(why);
  BOOST_TEST(diagnosis["cause"]["kind"] == "non_finite", why.out);
  BOOST_TEST(diagnosis["non_finite"]["name"] == nan_name, why.out);
  BOOST_TEST(diagnosis["non_finite"]["step"].get<std::int64_t>() == nan_step, why.out);
  BOOST_TEST(diagnosis["cause"]["step"].get<std::int64_t>() == nan_step, why.out);
  const ProcessResult human = RunProcess({Bin(), "why", "1", "--db", db}, dir.Path(""));
  BOOST_TEST(human.out.find(nan_name + " of worker rank 0 became non-finite at step " +
                            std::to_string(nan_step)) != std::string::npos,
             human.out);
  BOOST_TEST(human.out.find("lower optimizer.lr") != std::string::npos, human.out);
}

// predict reads IDX images without their labels (eval needs them): the same predictions.
BOOST_AUTO_TEST_CASE(predict_takes_idx_images_without_labels) {
  TempDir dir;
  std::string pixels, labels;
  for (int i = 0; i < 40; ++i) {  // 40 2x3 images: dark ones label 0, bright ones label 1
    pixels += std::string(6, static_cast<char>(i % 2 == 0 ? 20 + i : 200 + i));
    labels.push_back(static_cast<char>(i % 2));
  }
  const std::string images = dir.Write("images", testing::IdxBytes(0x803, {40, 2, 3}, pixels));
  const std::string label_file = dir.Write("labels", testing::IdxBytes(0x801, {40}, labels));
  const std::string job = dir.Write(
      "job.toml", "name = \"idx\"\n[data]\nformat = \"idx\"\ntrain = \"images\"\n"
                  "train_labels = \"labels\"\nscale = 255.0\n[model]\ntype = \"softmax\"\n"
                  "[train]\nepochs = 2\nbatch_size = 8\n");
  const std::string db = dir.Path("runs.db");
  BOOST_REQUIRE(RunProcess({Bin(), "run", job, "--db", db}, dir.Path("")).exit_code == 0);
  const std::string model = dir.Path("m.dtm");
  BOOST_REQUIRE(RunProcess({Bin(), "export", "1", "--db", db, "-o", model}, dir.Path(""))
                    .exit_code == 0);
  const ProcessResult bare = RunProcess({Bin(), "predict", model, "--data", images}, dir.Path(""));
  BOOST_TEST(bare.exit_code == 0, bare.err);
  const ProcessResult labelled = RunProcess(
      {Bin(), "predict", model, "--data", images, "--labels", label_file}, dir.Path(""));
  BOOST_TEST(labelled.exit_code == 0, labelled.err);
  BOOST_TEST(bare.out == labelled.out);
  BOOST_TEST(std::count(bare.out.begin(), bare.out.end(), '\n') == 40);
  const ProcessResult eval = RunProcess({Bin(), "eval", model, "--data", images}, dir.Path(""));
  BOOST_TEST(eval.exit_code == 2);
  BOOST_TEST(eval.err.find("--labels PATH") != std::string::npos, eval.err);
}

// predict takes a CSV with the label column or without it (as many columns as the model has
// features); classes print as integers, --proba a logistic model's positive-class probability;
// a data file where the job file goes, or no data at all, is a usage error saying what to write.
BOOST_AUTO_TEST_CASE(predict_reads_a_csv_with_or_without_its_label_column) {
  TempDir dir;
  std::string train = "x,y,z,label\n", labelled = train, bare = "x,y,z\n";
  for (int i = 0; i < 60; ++i) {
    const int label = i % 2;
    const std::string row = std::to_string(label * 4 + i % 3) + "," + std::to_string(i % 5) +
                            "," + std::to_string(label * 3);
    train += row + "," + std::to_string(label) + "\n";
    if (i < 10) labelled += row + "," + std::to_string(label) + "\n", bare += row + "\n";
  }
  dir.Write("train.csv", train);
  const std::string labelled_csv = dir.Write("labelled.csv", labelled);
  const std::string bare_csv = dir.Write("bare.csv", bare);
  const std::string job = dir.Write(
      "job.toml", "[data]\nformat = \"csv\"\ntrain = \"train.csv\"\n[model]\n"
                  "type = \"logistic\"\n[train]\nepochs = 3\nbatch_size = 10\n");
  const std::string db = dir.Path("runs.db");
  BOOST_REQUIRE(RunProcess({Bin(), "run", job, "--db", db}, dir.Path("")).exit_code == 0);
  const std::string model = dir.Path("m.dtm");
  BOOST_REQUIRE(
      RunProcess({Bin(), "export", "1", "--db", db, "-o", model}, dir.Path("")).exit_code == 0);

  const ProcessResult with = RunProcess({Bin(), "predict", model, "--data", labelled_csv}, dir.Path(""));
  const ProcessResult without = RunProcess({Bin(), "predict", model, "--data", bare_csv}, dir.Path(""));
  BOOST_TEST(with.exit_code == 0, with.err);
  BOOST_TEST(without.exit_code == 0, without.err);
  BOOST_TEST(with.out == without.out);
  BOOST_TEST(std::count(without.out.begin(), without.out.end(), '\n') == 10);
  for (std::size_t at = 0; at < without.out.size(); at += 2) {  // "0\n" or "1\n"
    BOOST_TEST((without.out.substr(at, 2) == "0\n" || without.out.substr(at, 2) == "1\n"));
  }
  const ProcessResult proba =
      RunProcess({Bin(), "predict", model, "--data", bare_csv, "--proba", "--json"}, dir.Path(""));
  BOOST_REQUIRE_MESSAGE(proba.exit_code == 0, proba.err);
  const auto probabilities = ParseJson(proba)["probabilities"].get<std::vector<float>>();
  BOOST_REQUIRE(probabilities.size() == 10u);
  for (std::size_t r = 0; r < probabilities.size(); ++r) {
    BOOST_TEST((probabilities[r] >= 0.0f && probabilities[r] <= 1.0f));
    BOOST_TEST((without.out[2 * r] == '1' ? probabilities[r] >= 0.5f : probabilities[r] <= 0.5f));
  }
  // eval needs the labels the bare file lacks.
  const ProcessResult eval = RunProcess({Bin(), "eval", model, "--data", bare_csv}, dir.Path(""));
  BOOST_TEST(eval.exit_code == 2);
  BOOST_TEST(eval.err.find("no label column") != std::string::npos, eval.err);

  const ProcessResult forgot = RunProcess({Bin(), "predict", model, bare_csv}, dir.Path(""));
  BOOST_TEST(forgot.exit_code == 2);
  BOOST_TEST(forgot.err.find(bare_csv + " is a data file, not a job file: name it with --data " +
                             bare_csv) != std::string::npos,
             forgot.err);
  BOOST_TEST(forgot.err.find("TOML") == std::string::npos, forgot.err);
  const ProcessResult nothing = RunProcess({Bin(), "predict", model}, dir.Path(""));
  BOOST_TEST(nothing.exit_code == 2);
  BOOST_TEST(nothing.err.find("name the data: --data PATH") != std::string::npos, nothing.err);
}

// FTRL-Proximal trains a softmax regression in one process and on parameter servers (whose
// shards keep z and n in the checkpoint); an L1 larger than any gradient sum holds every
// parameter at exactly 0.
BOOST_AUTO_TEST_CASE(ftrl_trains_and_its_l1_holds_parameters_at_zero) {
  std::string job_text = kQuickJob;
  job_text.replace(job_text.find("type = \"mlp\"\nhidden = [16]\nactivation = \"tanh\""),
                   std::string("type = \"mlp\"\nhidden = [16]\nactivation = \"tanh\"").size(),
                   "type = \"softmax\"");
  for (const std::string cluster :
       {"", "[cluster]\nworkers = 2\nmode = \"sync\"\nallreduce = \"ps\"\n"}) {
    BOOST_TEST_CONTEXT(cluster) {
      TempDir dir;
      const std::string job = dir.Write("job.toml", job_text + cluster);
      const std::string db = dir.Path("runs.db");
      const ProcessResult r = RunProcess({Bin(), "run", job, "--db", db, "--json", "--set",
                                          "optimizer.type=ftrl", "--set", "optimizer.alpha=0.5"},
                                         dir.Path(""));
      BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
      BOOST_TEST(ParseJson(r)["metrics"]["accuracy"].get<double>() > 0.8);
      const store::CheckpointData c = Final(db, 1);
      BOOST_REQUIRE(c.optimizer_state.size() == 2u);  // z and n
      BOOST_TEST(c.optimizer_state[1].size() == c.params.size());
      BOOST_TEST(std::ranges::all_of(c.optimizer_state[1], [](float n) { return n >= 0.0f; }));
    }
  }
  TempDir dir;
  const std::string job = dir.Write("job.toml", job_text);
  const std::string db = dir.Path("runs.db");
  const ProcessResult r = RunProcess({Bin(), "run", job, "--db", db, "--set", "optimizer.type=ftrl",
                                      "--set", "optimizer.l1=1000000"},
                                     dir.Path(""));
  BOOST_REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  const store::CheckpointData c = Final(db, 1);
  BOOST_TEST(std::ranges::all_of(c.params, [](float p) { return p == 0.0f; }));
}

// On parameter servers each replica keeps its own running statistics, and the checkpoint the
// job exports holds replica 0's. (Async runs Adagrad, Downpour's optimizer: momentum
// on stale pushes diverges on this job with or without batchnorm.)
BOOST_AUTO_TEST_CASE(batchnorm_on_parameter_servers_exports_a_replicas_running_statistics) {
  std::string async_job = kQuickCnnJob + "[cluster]\nworkers = 2\nmode = \"async\"\nservers = 2\n";
  async_job.replace(async_job.find("\"momentum\""), 10, "\"adagrad\"");
  for (const std::string& job :
       {async_job,
        kQuickCnnJob + "[cluster]\nworkers = 2\nmode = \"sync\"\nallreduce = \"ps\"\n"}) {
    BOOST_TEST_CONTEXT(job.substr(job.find("[cluster]"))) { CheckExportThenPredict(job); }
  }
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace run_test
}  // namespace dtrain::cli
