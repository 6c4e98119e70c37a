// End to end through the real binary: `dtrain sweep run` on a 2 x 2 grid of a tiny model trains
// each trial once as a job of the store, and its leaderboard (--json, and the table) ranks them
// by the metric as the trials themselves recorded it; --dry-run trains nothing; a failed trial
// is shown failed and the sweep goes on (status 1); a sweep the command cannot run (asha) or an
// invalid one exits 2 with the reason before anything is stored.
#include <boost/test/unit_test.hpp>
#include <csignal>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>

#include "cmd/run_checks.h"
#include "common/process.h"
#include "common/temp_dir.h"
#include "daemon/store/store.h"

namespace dtrain::cli {
namespace {

using run_checks::Bin;
using run_checks::OpenStore;
using run_checks::ParseJson;
using testing::RunProcess;
using testing::TempDir;

// A tiny base job (600 generated rows, one epoch) and a grid over lr and batch_size.
constexpr const char* kBase = R"([data]
format = "synthetic"
synthetic = "blobs"
rows = 600
test_rows = 200
features = 4
classes = 3
noise = 1.5
[model]
type = "mlp"
hidden = [8]
[train]
epochs = 1
seed = 3
[optimizer]
type = "momentum"
)";

constexpr const char* kGrid = R"([sweep]
method = "grid"
metric = "eval_accuracy"
[sweep.parameters]
"optimizer.lr" = { values = [0.001, 0.2] }
"train.batch_size" = { values = [16, 64] }
)";

std::pair<double, std::int64_t> Point(const nlohmann::json& trial) {
  return {trial["parameters"]["optimizer.lr"].get<double>(),
          trial["parameters"]["train.batch_size"].get<std::int64_t>()};
}

BOOST_AUTO_TEST_SUITE(sweep_run)

BOOST_AUTO_TEST_CASE(a_grid_trains_each_point_once_and_ranks_by_the_recorded_metric) {
  TempDir dir;
  const std::string sweep = dir.Write("grid.toml", std::string(kBase) + kGrid);
  const std::string db = dir.Path("sweep.db");

  // --dry-run: the four points, nothing trained, no store.
  const auto plan =
      RunProcess({Bin(), "sweep", "run", sweep, "--db", db, "--dry-run", "--json"}, dir.Path(""));
  BOOST_TEST(plan.exit_code == 0, plan.err);
  const nlohmann::json planned = ParseJson(plan);
  BOOST_REQUIRE_EQUAL(planned["trials"].size(), 4u);
  for (const nlohmann::json& t : planned["trials"]) BOOST_TEST(t["state"] == "not run");
  BOOST_TEST(!std::filesystem::exists(db));

  const auto r = RunProcess({Bin(), "sweep", "run", sweep, "--db", db, "--json"}, dir.Path(""));
  BOOST_TEST(r.exit_code == 0, r.err);
  const nlohmann::json board = ParseJson(r);
  BOOST_TEST(board["method"] == "grid");
  BOOST_TEST(board["metric"] == "eval_accuracy");
  BOOST_TEST(board["goal"] == "max");
  const nlohmann::json& trials = board["trials"];
  BOOST_REQUIRE_EQUAL(trials.size(), 4u);

  // Every point exactly once, each its own job, trained one epoch at its own batch size.
  std::set<std::pair<double, std::int64_t>> points;
  std::set<std::int64_t> jobs, indices;
  auto store = OpenStore(db);
  std::optional<double> previous;
  for (const nlohmann::json& t : trials) {
    BOOST_TEST_CONTEXT(t.dump()) {
      points.insert(Point(t));
      indices.insert(t["trial"].get<std::int64_t>());
      const std::int64_t job = t["job"].get<std::int64_t>();
      jobs.insert(job);
      BOOST_TEST(t["state"] == "succeeded");
      const std::int64_t batch = Point(t).second;
      BOOST_TEST(t["steps"].get<std::int64_t>() == (600 + batch - 1) / batch);
      // The board's metric is the trial's own last recorded eval_accuracy.
      auto rows = store->Metrics(job, "eval_accuracy");
      BOOST_REQUIRE(rows.ok());
      BOOST_REQUIRE(!rows.value().empty());
      const double recorded = rows.value().back().value;
      BOOST_TEST(t["metric"].get<double>() == recorded);
      // Ranked best first: never above the one before.
      if (previous) BOOST_TEST(recorded <= *previous);
      previous = recorded;
      auto record = store->GetJob(job);
      BOOST_REQUIRE(record.ok());
      BOOST_TEST(record.value().name == "grid-t" + std::to_string(t["trial"].get<int>()));
    }
  }
  BOOST_TEST(points.size() == 4u);
  BOOST_TEST(jobs.size() == 4u);
  BOOST_TEST((indices == std::set<std::int64_t>{0, 1, 2, 3}));
  BOOST_TEST(board["best"]["job"] == trials[0]["job"]);

  // A trial's metrics are read like any run's.
  const std::string first = std::to_string(trials[0]["job"].get<int>());
  const auto metrics = RunProcess({Bin(), "metrics", first, "--db", db}, dir.Path(""));
  BOOST_TEST(metrics.exit_code == 0, metrics.err);
  BOOST_TEST(metrics.out.find("eval_accuracy") != std::string::npos);

  // For people: the table, a row per trial, the best first.
  const auto human =
      RunProcess({Bin(), "sweep", "run", sweep, "--db", dir.Path("again.db")}, dir.Path(""));
  BOOST_TEST(human.exit_code == 0, human.err);
  const std::size_t header = human.out.find("RANK  TRIAL");
  BOOST_REQUIRE(header != std::string::npos);
  BOOST_TEST(human.out.find("optimizer.lr", header) != std::string::npos);
  BOOST_TEST(human.out.find("\n   1 ", header) != std::string::npos);
  BOOST_TEST(human.out.find("\n   4 ", header) != std::string::npos);
}

// A trial that fails is shown failed, last, and the trials after it still run. lr = 1000 on a
// linear regression multiplies the error by about -2000 a step: it overflows within the epoch on
// any CPU, and train.on_divergence = "fail" (the default) fails the job.
BOOST_AUTO_TEST_CASE(a_failed_trial_is_shown_failed_and_the_sweep_goes_on) {
  TempDir dir;
  const std::string sweep = dir.Write("diverge.toml", R"([data]
format = "synthetic"
synthetic = "linear"
rows = 600
test_rows = 200
features = 4
[model]
type = "linear"
[train]
epochs = 1
batch_size = 16
[sweep]
method = "grid"
metric = "eval_mse"
[sweep.parameters]
"optimizer.lr" = { values = [1000, 0.01] }
)");
  const std::string db = dir.Path("d.db");
  const auto r = RunProcess({Bin(), "sweep", "run", sweep, "--db", db, "--json"}, dir.Path(""));
  BOOST_TEST(r.exit_code == 1, r.err);
  const nlohmann::json board = ParseJson(r);
  BOOST_TEST(board["goal"] == "min");
  const nlohmann::json& trials = board["trials"];
  BOOST_REQUIRE_EQUAL(trials.size(), 2u);
  BOOST_TEST(trials[0]["trial"] == 1);
  BOOST_TEST(trials[0]["state"] == "succeeded");
  BOOST_TEST(trials[0]["metric"].is_number());
  BOOST_TEST(trials[1]["trial"] == 0);
  BOOST_TEST(trials[1]["state"] == "failed");
  BOOST_TEST(trials[1]["metric"].is_null());
  BOOST_TEST(trials[1]["reason"].get<std::string>().find("diverged") != std::string::npos);
  BOOST_TEST(board["best"]["trial"] == 1);
  auto store = OpenStore(db);
  auto failed = store->GetJob(trials[1]["job"].get<std::int64_t>());
  BOOST_REQUIRE(failed.ok());
  BOOST_TEST((failed.value().state == store::JobState::kFailed));
}

// Ctrl-C stops the running trial after a checkpoint (cancelled, resumable) and runs no other.
BOOST_AUTO_TEST_CASE(an_interrupt_cancels_the_running_trial_and_runs_no_more) {
  TempDir dir;
  // Trains until stopped: a million epochs, a checkpoint every 20 steps.
  const std::string sweep = dir.Write(
      "endless.toml",
      std::string(kBase).replace(std::string(kBase).find("epochs = 1"), 10, "epochs = 1000000") +
          "[checkpoint]\nevery_steps = 20\n" + kGrid);
  const std::string db = dir.Path("e.db");
  dtrain::testing::ChildProcess child =
      testing::StartProcess({Bin(), "sweep", "run", sweep, "--db", db, "--json"}, dir.Path(""));
  run_checks::WaitForCheckpoint(db, 1, 20);
  child.Signal(SIGINT);
  const auto r = child.Wait();
  BOOST_TEST(r.exit_code == 130, r.err);
  const nlohmann::json board = ParseJson(r);
  const nlohmann::json& trials = board["trials"];
  BOOST_REQUIRE_EQUAL(trials.size(), 4u);
  std::size_t cancelled = 0, not_run = 0;
  for (const nlohmann::json& t : trials) {
    if (t["state"] == "cancelled") {
      ++cancelled;
      BOOST_TEST(t["job"] == 1);
      BOOST_TEST(t["reason"].get<std::string>().find("dtrain run --resume 1") != std::string::npos);
    }
    if (t["state"] == "not run") ++not_run;
  }
  BOOST_TEST(cancelled == 1u);
  BOOST_TEST(not_run == 3u);
  auto store = OpenStore(db);
  auto jobs = store->ListJobs();
  BOOST_REQUIRE(jobs.ok());
  BOOST_TEST(jobs.value().size() == 1u);  // no trial after the interrupted one was created
}

BOOST_AUTO_TEST_CASE(a_sweep_that_cannot_run_here_exits_2_with_the_reason) {
  TempDir dir;
  const std::string asha = dir.Write(
      "asha.toml", std::string(kBase) +
                       "[sweep]\nmethod = \"asha\"\nmetric = \"eval_loss\"\nmax_trials = 4\n"
                       "min_steps = 1\nmax_steps = 9\n[sweep.parameters]\n"
                       "\"optimizer.lr\" = { log_uniform = [1e-3, 1e-1] }\n");
  const auto refused =
      RunProcess({Bin(), "sweep", "run", asha, "--db", dir.Path("a.db")}, dir.Path(""));
  BOOST_TEST(refused.exit_code == 2);
  BOOST_TEST(refused.err.find("\"asha\" needs the daemon") != std::string::npos, refused.err);
  BOOST_TEST(!std::filesystem::exists(dir.Path("a.db")));

  const std::string bad =
      dir.Write("bad.toml", std::string(kBase) +
                                "[sweep]\nmethod = \"grid\"\nmetric = \"eval_accuracy\"\n"
                                "[sweep.parameters]\n\"optimizer.lr\" = { values = [0.1, "
                                "5000] }\n");
  const auto invalid =
      RunProcess({Bin(), "sweep", "run", bad, "--db", dir.Path("b.db")}, dir.Path(""));
  BOOST_TEST(invalid.exit_code == 2);
  BOOST_TEST(invalid.err.find("bad.toml:21:1: optimizer.lr: trial 1 (optimizer.lr=5000)") !=
                 std::string::npos,
             invalid.err);
  BOOST_TEST(!std::filesystem::exists(dir.Path("b.db")));
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace
}  // namespace dtrain::cli
