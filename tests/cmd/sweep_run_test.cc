// End to end through the real binary: `dtrain sweep run` on a 2 x 2 grid of a tiny model trains
// each trial once as a job of the store, and its leaderboard (--json, and the table) ranks them
// by the metric as the trials themselves recorded it; --dry-run trains nothing; a failed trial
// is shown failed and the sweep goes on (status 1); an invalid sweep exits 2 with the reason
// before anything is stored. ASHA: each trial's job trains to its rung and is promoted by
// resuming from its checkpoint, never trained again, by the rule config::NextAshaAction applies
// to the metrics the trials recorded.
#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <csignal>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <utility>

#include "cmd/run_checks.h"
#include "common/asha_replay.h"
#include "common/process.h"
#include "common/temp_dir.h"
#include "config/sweep_asha.h"
#include "daemon/store/store.h"

namespace dtrain::cli {
namespace sweep_run_test {

using run_checks::Bin;
using run_checks::OpenStore;
using run_checks::ParseJson;
using testing::ReplayedRungs;
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

BOOST_AUTO_TEST_CASE(an_invalid_sweep_exits_2_with_the_reason) {
  TempDir dir;
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

// ASHA over 9 trials, rungs 2, 6 and 18 steps (reduction_factor 3), ranked by eval_loss.
BOOST_AUTO_TEST_CASE(asha_promotes_by_resuming_the_rungs_best_and_never_retrains) {
  TempDir dir;
  const std::string sweep = dir.Write("asha.toml", std::string(kBase) + R"([sweep]
method = "asha"
metric = "eval_loss"
goal = "min"
max_trials = 9
seed = 5
min_steps = 2
max_steps = 18
reduction_factor = 3
[sweep.parameters]
"optimizer.lr" = { log_uniform = [1e-3, 0.5] }
"train.batch_size" = { values = [16, 32] }
)");
  const std::string db = dir.Path("asha.db");
  const auto r = RunProcess({Bin(), "sweep", "run", sweep, "--db", db, "--json"}, dir.Path(""));
  BOOST_TEST(r.exit_code == 0, r.err);
  const nlohmann::json board = ParseJson(r);
  BOOST_TEST(board["method"] == "asha");
  const std::vector<std::int64_t> rungs = {2, 6, 18};
  BOOST_TEST(board["rungs"].get<std::vector<std::int64_t>>() == rungs);
  const nlohmann::json& trials = board["trials"];
  BOOST_REQUIRE_EQUAL(trials.size(), 9u);

  auto store = OpenStore(db);
  // metric[i][k]: trial i's eval_loss recorded at rung k's step, for the rungs it reached.
  std::vector<std::vector<double>> metric(9);
  std::vector<int> reached(9, -1);
  for (const nlohmann::json& t : trials) {
    BOOST_TEST_CONTEXT(t.dump()) {
      const auto i = t["trial"].get<std::size_t>();
      const std::int64_t job = t["job"].get<std::int64_t>();
      BOOST_TEST(t["state"] == "succeeded");
      const int rung = t["rung"].get<int>();
      reached[i] = rung;
      BOOST_REQUIRE(rung >= 0);
      // The job trained exactly to its highest rung: its steps, its newest checkpoint and its
      // last recorded step; no step was recorded twice, so no rung was trained again.
      BOOST_TEST(t["steps"].get<std::int64_t>() == rungs[rung]);
      auto checkpoints = store->Checkpoints(job);
      BOOST_REQUIRE(checkpoints.ok());
      BOOST_REQUIRE(!checkpoints.value().empty());
      BOOST_TEST(checkpoints.value().back().step == rungs[rung]);
      auto rows = store->Metrics(job, "eval_loss");
      BOOST_REQUIRE(rows.ok());
      BOOST_REQUIRE(!rows.value().empty());
      BOOST_TEST(rows.value().back().step == rungs[rung]);
      for (std::size_t k = 1; k < rows.value().size(); ++k) {
        BOOST_TEST(rows.value()[k].step > rows.value()[k - 1].step);
      }
      for (int k = 0; k <= rung; ++k) {
        auto at = std::find_if(rows.value().begin(), rows.value().end(),
                               [&](const store::MetricRow& m) { return m.step == rungs[k]; });
        BOOST_REQUIRE(at != rows.value().end());  // evaluated at every rung's end
        metric[i].push_back(at->value);
      }
      BOOST_TEST(t["metric"].get<double>() == metric[i].back());
      // Each promotion resumed the job from the checkpoint of the rung below.
      auto events = store->Events(job);
      BOOST_REQUIRE(events.ok());
      for (int k = 0; k < rung; ++k) {
        const std::string resumed =
            "resumed from the checkpoint at step " + std::to_string(rungs[k]);
        BOOST_TEST(std::any_of(events.value().begin(), events.value().end(),
                               [&](const store::EventRecord& e) { return e.reason == resumed; }),
                   resumed);
      }
      auto record = store->GetJob(job);
      BOOST_REQUIRE(record.ok());
      BOOST_TEST(record.value().name == "asha-t" + std::to_string(i));
      if (rung < 2) {
        BOOST_TEST(
            record.value().reason.find("stopped by ASHA at rung " + std::to_string(rung)) == 0u,
            record.value().reason);
      }
    }
  }

  // The rule over the stored metrics: at each rung, the top floor(n / 3) of the trials that
  // completed it went on to the next, and a trial went on only from the top floor(m / 3) of the
  // m trials at its rung when it was promoted (replayed one trial at a time, as the sweep ran).
  std::vector<std::size_t> per_rung(3, 0);
  for (int rung : reached) {
    for (int k = 0; k <= rung; ++k) ++per_rung[static_cast<std::size_t>(k)];
  }
  BOOST_TEST(per_rung[0] == 9u);
  for (std::size_t k = 0; k < 2; ++k) {
    std::vector<std::size_t> at_rung;
    for (std::size_t i = 0; i < 9; ++i) {
      if (reached[i] >= static_cast<int>(k)) at_rung.push_back(i);
    }
    std::stable_sort(at_rung.begin(), at_rung.end(),
                     [&](std::size_t a, std::size_t b) { return metric[a][k] < metric[b][k]; });
    for (std::size_t top = 0; top < at_rung.size() / 3; ++top) {
      BOOST_TEST(reached[at_rung[top]] > static_cast<int>(k), "trial " << at_rung[top]);
    }
  }
  const std::vector<int> replayed =
      ReplayedRungs(config::AshaOptions{2, 18, 3}, config::SweepGoal::kMin, metric);
  BOOST_TEST(replayed == reached, boost::test_tools::per_element());
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace sweep_run_test
}  // namespace dtrain::cli
