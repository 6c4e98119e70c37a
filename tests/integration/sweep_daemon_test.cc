// Sweeps through a real dtraind and the real CLI (dtrain sweep submit|status|cancel|best): a grid
// sweep runs every point exactly once as the daemon's jobs, its trials' values (from the store)
// those of config::GridTrials; a random sweep's those of config::RandomTrial(seed, i); cancel
// stops the trials not ended and starts no more; another user neither sees nor cancels a sweep
// (as root: a second account);
// and a 16-trial sweep with dtraind SIGKILLed 3 times while it runs ends with exactly 16 trials,
// none run twice, counted from the store: one job per trial, no other job, each job's recorded
// steps those of one run. ASHA: each trial's job trains to its rung and is promoted by resuming
// it (never trained again), the rule's fixed point holds at the end, never more than
// max_concurrent trials run, promotions included; killed twice (while a trial trains toward rung
// 0, then while a promoted trial trains, each frozen with SIGSTOP so that the kill finds it
// mid-rung on any machine), a sweep of one trial at a time ends with the rungs the rule gives
// replayed over the recorded metrics.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <boost/test/unit_test.hpp>
#include <chrono>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "common/asha_replay.h"
#include "common/process.h"
#include "config/sweep_asha.h"
#include "config/sweep_file.h"
#include "daemon/store/store.h"
#include "integration/daemon_fixture.h"
#include "integration/sweep_job.h"
#include "integration/test_user.h"
#include "integration/worker_processes.h"

namespace dtrain::testing {
namespace sweep_daemon_test {

using json = nlohmann::json;
using namespace std::chrono_literals;

constexpr int kSteps = 12;       // each trial's
constexpr int kLongSteps = 300;  // the crash test's: long enough to be killed mid-trial

// 16 points: 4 learning rates by 4 batch sizes.
const std::string kGrid = R"(
[sweep]
method = "grid"
metric = "eval_accuracy"
max_concurrent = 2
[sweep.parameters]
"optimizer.lr" = { values = [0.05, 0.1, 0.2, 0.4] }
"train.batch_size" = { values = [8, 16, 24, 32] }
)";

ProcessResult Dtrain(const DaemonFixture& d, std::vector<std::string> args) {
  args.insert(args.begin(), {EnvPath("DTRAIN_BIN"), "--socket", d.socket()});
  return RunProcess(args, d.dir().Path(""));
}

std::int64_t SubmitSweep(const DaemonFixture& d, const std::string& file) {
  const ProcessResult submitted = Dtrain(d, {"sweep", "submit", file, "--json"});
  BOOST_REQUIRE_MESSAGE(submitted.exit_code == 0, submitted.err);
  return json::parse(submitted.out)["id"].get<std::int64_t>();
}

json Status(const DaemonFixture& d, std::int64_t id) {
  const json reply = d.Request({{"type", "sweep_status"}, {"id", id}});
  BOOST_REQUIRE_MESSAGE(reply["ok"] == true, reply.dump());
  return reply;
}

// How many of the sweep's trials have a job.
std::size_t Started(const json& status) {
  std::size_t started = 0;
  for (const json& t : status["trials"]) started += t["job"].is_null() ? 0 : 1;
  return started;
}

// Polls until `done(status)` (or ten minutes pass: a hung sweep fails the test, not CI).
template <typename Done>
json WaitFor(const DaemonFixture& d, std::int64_t id, Done done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(10);
  json status;
  while (std::chrono::steady_clock::now() < deadline) {
    status = Status(d, id);
    if (done(status)) return status;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  BOOST_FAIL("sweep " << id << " never got there: " << status.dump());
  return status;
}

json WaitForEnd(const DaemonFixture& d, std::int64_t id) {
  return WaitFor(d, id, [](const json& s) { return s["sweep"]["state"] != "running"; });
}

// The trial's values as the reply gives them, as a config::Trial.
config::Trial TrialOf(const json& t) {
  config::Trial trial{t["trial"].get<std::int64_t>(), {}};
  for (const json& p : t["parameters"]) {
    trial.parameters.push_back({p["key"].get<std::string>(),
                                {p["toml"].get<std::string>(), p["json"].get<std::string>(),
                                 p["shown"].get<std::string>()}});
  }
  return trial;
}

std::unique_ptr<store::Store> OpenStore(const DaemonFixture& d) {
  auto store = store::Store::Open(d.dir().Path("state/dtrain.db"));
  BOOST_REQUIRE_MESSAGE(store.ok(), store.status().message());
  return std::move(store).value();
}

// ASHA over 9 trials ranked by eval_loss: rungs 200, 600 and 1800 steps (reduction_factor 3), each
// trial's values drawn from the seed, at most `concurrent` trials at a time. The rungs are long
// enough that a poll sees a trial train (the kill test then freezes it there).
std::string AshaSweep(int concurrent) {
  return SweepFile(R"(
[sweep]
method = "asha"
metric = "eval_loss"
goal = "min"
max_trials = 9
seed = 5
min_steps = 200
max_steps = 1800
reduction_factor = 3
max_concurrent = )" + std::to_string(concurrent) +
                       R"(
[sweep.parameters]
"optimizer.lr" = { log_uniform = [0.001, 0.5] }
)",
                   kSteps);
}

const std::vector<std::int64_t> kRungs = {200, 600, 1800};
const config::AshaOptions kAsha{200, 1800, 3};

// An ASHA sweep that ended, checked against the store: 9 trials, one job each and no other job;
// each job succeeded, trained exactly to its highest rung (its status steps, its newest checkpoint,
// its last recorded step) and recorded every step once, again at most twice per kill (`kills`), so
// it was resumed at each promotion, never trained again; paused trials say where they stopped.
// Returns each trial's eval_loss at each rung it completed, as the driver reads it.
std::vector<std::vector<double>> CheckAshaTrials(const DaemonFixture& d, std::int64_t id,
                                                 const json& status, int kills) {
  BOOST_TEST(status["sweep"]["state"] == "succeeded", status.dump());
  BOOST_TEST(status["sweep"]["asha"]["rungs"].get<std::vector<std::int64_t>>() == kRungs);
  const std::unique_ptr<store::Store> store = OpenStore(d);
  const std::vector<store::SweepTrialRecord> rows = store->SweepTrials(id).value();
  BOOST_REQUIRE(rows.size() == 9u);
  BOOST_REQUIRE(status["trials"].size() == 9u);
  BOOST_TEST(store->ListJobs().value().size() == 9u);  // no job besides the trials'
  std::vector<std::vector<double>> metric(9);
  std::set<std::int64_t> jobs;
  for (std::size_t i = 0; i < 9; ++i) {
    const json& t = status["trials"][i];
    BOOST_TEST_CONTEXT(t.dump()) {
      BOOST_REQUIRE(rows[i].job.has_value());
      const std::int64_t job = *rows[i].job;
      jobs.insert(job);
      BOOST_TEST(t["job"] == job);
      BOOST_TEST(t["state"] == "succeeded");
      BOOST_REQUIRE(t["rung"].is_number());
      const int rung = t["rung"].get<int>();
      const std::int64_t top = kRungs[static_cast<std::size_t>(rung)];
      BOOST_TEST(t["steps"] == top);
      const auto checkpoints = store->Checkpoints(job);
      BOOST_REQUIRE(checkpoints.ok());
      BOOST_REQUIRE(!checkpoints.value().empty());
      BOOST_TEST(checkpoints.value().back().step == top);
      std::map<std::int64_t, int> recorded;
      const auto steps = store->Metrics(job, "train_loss");
      BOOST_REQUIRE(steps.ok());
      for (const store::MetricRow& row : steps.value()) ++recorded[row.step];
      BOOST_TEST(recorded.size() == static_cast<std::size_t>(top));
      BOOST_TEST(recorded.begin()->first == 1);
      BOOST_TEST(recorded.rbegin()->first == top);
      int repeated = 0;
      for (const auto& [step, count] : recorded) repeated += count - 1;
      BOOST_TEST(repeated <= 2 * kills, "recorded " << repeated << " steps again");
      // The metric at each rung it completed: the last value at a step up to the rung's, one
      // recorded at exactly that step (every run evaluates at its last step).
      const auto values = store->Metrics(job, "eval_loss");
      BOOST_REQUIRE(values.ok());
      for (int k = 0; k <= rung; ++k) {
        const std::int64_t at = kRungs[static_cast<std::size_t>(k)];
        std::optional<double> value;
        bool exact = false;
        for (const store::MetricRow& row : values.value()) {
          if (row.step > at) break;
          value = row.value;
          exact |= row.step == at;
        }
        BOOST_TEST(exact, "no eval_loss at step " << at);
        BOOST_REQUIRE(value.has_value());
        metric[i].push_back(*value);
      }
      BOOST_TEST(t["metric"].get<double>() == metric[i].back());
      const std::string reason = t["reason"].get<std::string>();
      if (rung < 2) {
        BOOST_TEST(reason == config::AshaStoppedReason(kAsha, rung));
      }
    }
  }
  BOOST_TEST(jobs.size() == 9u);
  // The end is ASHA's fixed point: with every trial started and none running, no trial the rule
  // would still promote (at each rung, the top third of those that completed it went on).
  std::vector<config::AshaTrial> facts(9);
  for (std::size_t i = 0; i < 9; ++i) facts[i].metrics = metric[i];
  BOOST_TEST((config::NextAshaAction(kAsha, config::SweepGoal::kMin, 9, facts).kind ==
              config::AshaAction::Kind::kDone));
  // `sweep best`: the best trial of the highest rung reached.
  std::size_t best = 0;
  for (std::size_t i = 1; i < 9; ++i) {
    if (config::RanksBefore(config::SweepGoal::kMin,
                            {static_cast<int>(metric[i].size()) - 1, metric[i].back()},
                            {static_cast<int>(metric[best].size()) - 1, metric[best].back()})) {
      best = i;
    }
  }
  BOOST_TEST(metric[best].size() == 3u);  // someone reached the last rung
  const ProcessResult printed = Dtrain(d, {"sweep", "best", std::to_string(id)});
  BOOST_TEST(printed.exit_code == 0, printed.err);
  BOOST_TEST(printed.out == std::to_string(*rows[best].job) + "\n");
  return metric;
}

// Waits for a trial of the sweep that trains and that `picked` picks (from its TRIAL), and
// freezes it there: SIGSTOPs its job's running workers, found by their pids in its JOB. A
// trial whose job ended between the poll and the stop (its workers gone or about to be) is let
// go (SIGCONT) and another is waited for. True once a trial's workers have all stopped while
// its job still runs (it can then neither finish its rung nor end); false when the sweep ended
// first.
bool FreezeTrial(const DaemonFixture& d, std::int64_t id, bool (*picked)(const json&)) {
  for (;;) {
    const json status = WaitFor(d, id, [picked](const json& s) {
      bool found = s["sweep"]["state"] != "running";
      for (const json& t : s["trials"]) {
        found |= t["state"].get<std::string>() == "running" && picked(t);
      }
      return found;
    });
    if (status["sweep"]["state"] != "running") return false;
    for (const json& t : status["trials"]) {
      if (t["state"] != "running" || !picked(t)) continue;
      const std::int64_t job = t["job"].get<std::int64_t>();
      std::vector<pid_t> stopped;
      bool all = true;
      for (const pid_t pid : RunningWorkerPids(d.Status(job))) {
        if (WorkerAlive(pid) && ::kill(pid, SIGSTOP) == 0) {
          stopped.push_back(pid);
        } else {
          all = false;
        }
      }
      for (const pid_t pid : stopped) {
        // A process that exits meanwhile never stops.
        while (!Stopped(pid) && WorkerAlive(pid)) std::this_thread::sleep_for(100us);
        all = all && Stopped(pid);
      }
      if (all && !stopped.empty() && d.Status(job)["state"] == "running") return true;
      for (const pid_t pid : stopped) ::kill(pid, SIGCONT);
    }
  }
}

std::vector<int> Rungs(const json& status) {
  std::vector<int> rungs;
  for (const json& t : status["trials"])
    rungs.push_back(t["rung"].is_null() ? -1 : t["rung"].get<int>());
  return rungs;
}

BOOST_AUTO_TEST_SUITE(sweep_daemon)

BOOST_AUTO_TEST_CASE(a_grid_runs_every_point_once_and_names_the_best) {
  DaemonFixture d({"--max-jobs", "2"});
  const std::string file = d.dir().Write("grid.toml", SweepFile(kGrid, kSteps));
  const std::int64_t id = SubmitSweep(d, file);
  const json status = WaitForEnd(d, id);
  BOOST_TEST(status["sweep"]["state"] == "succeeded", status.dump());
  BOOST_TEST(status["sweep"]["reason"] == "16 trials ended: 16 succeeded", status.dump());

  const config::SweepLoadResult loaded = config::LoadSweepFile(file);
  BOOST_REQUIRE(loaded.ok());
  const std::vector<config::Trial> grid = config::GridTrials(loaded.sweep->parameters);
  BOOST_REQUIRE(status["trials"].size() == grid.size());
  std::set<std::int64_t> jobs;
  for (std::size_t i = 0; i < grid.size(); ++i) {
    const json& t = status["trials"][i];
    BOOST_TEST((TrialOf(t) == grid[i]), t.dump());
    BOOST_TEST(t["state"] == "succeeded", t.dump());
    BOOST_TEST(t["steps"] == kSteps, t.dump());
    BOOST_TEST(t["metric"].is_number(), t.dump());
    jobs.insert(t["job"].get<std::int64_t>());
  }
  BOOST_TEST(jobs.size() == grid.size());

  // `best`: the job of the succeeded trial with the highest accuracy, the first among equals.
  const json* best = nullptr;
  for (const json& t : status["trials"]) {
    if (best == nullptr || t["metric"].get<double>() > (*best)["metric"].get<double>()) best = &t;
  }
  const ProcessResult printed = Dtrain(d, {"sweep", "best", std::to_string(id)});
  BOOST_REQUIRE_MESSAGE(printed.exit_code == 0, printed.err);
  BOOST_TEST(printed.out == std::to_string((*best)["job"].get<std::int64_t>()) + "\n");
  // The leaderboard, for people and as JSON.
  const ProcessResult board = Dtrain(d, {"sweep", "status", std::to_string(id)});
  BOOST_REQUIRE_MESSAGE(board.exit_code == 0, board.err);
  BOOST_TEST(board.out.find("succeeded, 16 of 16 trials ended") != std::string::npos, board.out);
  BOOST_TEST(board.out.find("optimizer.lr") != std::string::npos, board.out);
  const ProcessResult board_json = Dtrain(d, {"sweep", "status", std::to_string(id), "--json"});
  BOOST_REQUIRE_MESSAGE(board_json.exit_code == 0, board_json.err);
  const json parsed = json::parse(board_json.out);
  BOOST_TEST(parsed["trials"].size() == 16u);
  BOOST_TEST(parsed["best"]["job"] == (*best)["job"], board_json.out);
  // Each trial's job carries the sweep's tag.
  const ProcessResult tagged =
      Dtrain(d, {"list", "--json", "--tag", "sweep-" + std::to_string(id)});
  BOOST_TEST(json::parse(tagged.out).size() == 16u, tagged.out);
  // No such sweep: exit 4.
  BOOST_TEST(Dtrain(d, {"sweep", "status", "999"}).exit_code == 4);
}

BOOST_AUTO_TEST_CASE(a_random_sweep_draws_its_trials_from_its_seed) {
  DaemonFixture d;
  const std::string file = d.dir().Write("random.toml", SweepFile(R"(
[sweep]
method = "random"
metric = "eval_loss"
max_trials = 3
max_concurrent = 2
seed = 11
[sweep.parameters]
"optimizer.lr" = { log_uniform = [0.001, 0.5] }
"train.batch_size" = { int = [4, 64] }
)",
                                                                  kSteps));
  const std::int64_t id = SubmitSweep(d, file);
  const json status = WaitForEnd(d, id);
  const config::SweepLoadResult loaded = config::LoadSweepFile(file);
  BOOST_REQUIRE(loaded.ok());
  BOOST_REQUIRE(status["trials"].size() == 3u);
  for (std::int64_t i = 0; i < 3; ++i) {
    BOOST_TEST(
        (TrialOf(status["trials"][i]) == config::RandomTrial(loaded.sweep->parameters, 11, i)),
        status["trials"][i].dump());
  }
  BOOST_TEST(status["sweep"]["goal"] == "min");
}

BOOST_AUTO_TEST_CASE(cancel_stops_the_trials_not_ended_and_starts_no_more) {
  DaemonFixture d({"--max-jobs", "2"});
  // Long trials: cancelled while the first two run.
  const std::int64_t id = SubmitSweep(d, d.dir().Write("long.toml", SweepFile(kGrid, 100000)));
  WaitFor(d, id, [](const json& s) {
    std::size_t running = 0;
    for (const json& t : s["trials"]) running += t["state"] == "running" ? 1 : 0;
    return running == 2;
  });
  const ProcessResult cancelled = Dtrain(d, {"sweep", "cancel", std::to_string(id)});
  BOOST_REQUIRE_MESSAGE(cancelled.exit_code == 0, cancelled.err);
  const json status = Status(d, id);
  BOOST_TEST(status["sweep"]["state"] == "cancelled");
  BOOST_TEST(Started(status) == 2u, status.dump());
  for (const json& t : status["trials"]) {
    if (!t["job"].is_null()) BOOST_TEST(t["state"] == "cancelled", t.dump());
  }
  // Ended: a second cancel is a conflict (exit 1), and no trial starts later.
  BOOST_TEST(Dtrain(d, {"sweep", "cancel", std::to_string(id)}).exit_code == 1);
  const ProcessResult best = Dtrain(d, {"sweep", "best", std::to_string(id)});
  BOOST_TEST(best.exit_code == 4, best.err);
  BOOST_TEST(best.err.find("has no succeeded trial") != std::string::npos, best.err);
  BOOST_TEST(Started(Status(d, id)) == 2u);
}

BOOST_AUTO_TEST_CASE(another_user_neither_sees_nor_cancels_a_sweep) {
  if (::geteuid() != 0) return;  // needs a second account
  TestUser other("dtrain-sweep-user");
  SharedBinaries bins;
  TempDir dir;
  const std::string config = dir.Write("d.toml", "[daemon]\nsocket_mode = \"0666\"\n");
  DaemonFixture d({"--config", config, "--max-jobs", "2"}, bins.dtraind);
  ::chmod(d.dir().path().c_str(), 0755);
  ::chmod(dir.path().c_str(), 0755);
  const std::int64_t id = SubmitSweep(d, d.dir().Write("mine.toml", SweepFile(kGrid, 100000)));
  const std::string sweep = std::to_string(id);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"status", sweep}, {"cancel", sweep}, {"best", sweep}}) {
    std::vector<std::string> argv = {bins.dtrain, "--socket", d.socket(), "sweep"};
    argv.insert(argv.end(), args.begin(), args.end());
    const ProcessResult r = RunAs(other.name(), other.name(), argv, dir.Path(""));
    BOOST_TEST(r.exit_code == 4, args[0] << ": " << r.err);
    BOOST_TEST(r.err.find("no sweep " + sweep) != std::string::npos, r.err);
  }
  const ProcessResult listed =
      RunAs(other.name(), other.name(),
            {bins.dtrain, "--socket", d.socket(), "sweep", "list", "--json"}, dir.Path(""));
  BOOST_TEST(listed.exit_code == 0, listed.err);
  BOOST_TEST(json::parse(listed.out).empty(), listed.out);
  BOOST_TEST(Status(d, id)["sweep"]["state"] == "running");  // untouched; its owner cancels it
  BOOST_TEST(Dtrain(d, {"sweep", "cancel", sweep}).exit_code == 0);
}

BOOST_AUTO_TEST_CASE(invalid_trials_are_refused_before_anything_runs) {
  DaemonFixture d;
  // A request with a trial the daemon's limits refuse: nothing is stored.
  const json over = d.Request({{"type", "sweep_submit"},
                               {"sweep_toml", SweepFile(R"(
[sweep]
method = "grid"
metric = "eval_loss"
[sweep.parameters]
"train.threads" = { values = [1, 100000] }
)",
                                                        kSteps)},
                               {"base_dir", d.dir().Path("")},
                               {"source", "big.toml"}});
  BOOST_TEST(over["ok"] == false, over.dump());
  BOOST_TEST(d.Request({{"type", "sweep_list"}})["sweeps"].empty());
  BOOST_TEST(d.Request({{"type", "list"}})["jobs"].empty());
}

BOOST_AUTO_TEST_CASE(a_sweep_killed_three_times_ends_with_each_trial_run_once) {
  DaemonFixture d({"--max-jobs", "2"});
  const std::int64_t id = SubmitSweep(d, d.dir().Write("grid.toml", SweepFile(kGrid, kLongSteps)));
  // dtraind SIGKILLed once 3, 7 and 11 trials have jobs and one of them trains: mid-sweep,
  // mid-trial.
  for (const std::size_t started : {3u, 7u, 11u}) {
    WaitFor(d, id, [started](const json& s) {
      bool training = false;
      for (const json& t : s["trials"]) training |= t["state"] == "running" && t["steps"] > 0;
      return Started(s) >= started && training;
    });
    d.Stop(SIGKILL);
    d.Start();
  }
  const json status = WaitForEnd(d, id);
  BOOST_TEST(status["sweep"]["state"] == "succeeded", status.dump());
  d.Stop(SIGTERM);

  const std::unique_ptr<store::Store> store = OpenStore(d);
  const std::vector<store::SweepTrialRecord> trials = store->SweepTrials(id).value();
  BOOST_REQUIRE(trials.size() == 16u);
  std::set<std::int64_t> jobs;
  int resumed = 0;  // trials killed while training, resumed from their checkpoints
  for (std::size_t i = 0; i < trials.size(); ++i) {
    BOOST_TEST(trials[i].trial == static_cast<std::int64_t>(i));
    BOOST_REQUIRE(trials[i].job.has_value());
    const std::int64_t job = *trials[i].job;
    jobs.insert(job);
    const Result<std::vector<store::EventRecord>> read_events = store->Events(job);
    BOOST_REQUIRE(read_events.ok());
    const std::vector<store::EventRecord>& events = read_events.value();
    resumed += std::any_of(
                   events.begin(), events.end(),
                   [](const store::EventRecord& e) { return e.to == store::JobState::kRecovering; })
                   ? 1
                   : 0;
    BOOST_TEST((store->GetJob(job).value().state == store::JobState::kSucceeded));
    // One run's steps: every step 1..kLongSteps recorded, and again at most twice per kill (the
    // steps a killed worker had sent but not yet checkpointed: it checkpoints every step). A
    // trial run twice, or restarted from scratch, records its early steps again.
    std::map<std::int64_t, int> recorded;
    const Result<std::vector<store::MetricRow>> rows = store->Metrics(job, "train_loss");
    BOOST_REQUIRE(rows.ok());
    for (const store::MetricRow& row : rows.value()) ++recorded[row.step];
    BOOST_REQUIRE(!recorded.empty());
    BOOST_TEST(recorded.size() == static_cast<std::size_t>(kLongSteps), "trial " << i);
    BOOST_TEST(recorded.begin()->first == 1);
    BOOST_TEST(recorded.rbegin()->first == kLongSteps);
    int repeated = 0;
    for (const auto& [step, count] : recorded) repeated += count - 1;
    BOOST_TEST(repeated <= 6, "trial " << i << " recorded " << repeated << " steps again");
  }
  BOOST_TEST(jobs.size() == 16u);
  BOOST_TEST(store->ListJobs().value().size() == 16u);  // no job besides the trials'
  BOOST_TEST(resumed >= 1);                             // the kills came while trials trained
}

BOOST_AUTO_TEST_CASE(asha_promotes_the_rungs_best_by_resuming_their_jobs) {
  DaemonFixture d({"--max-jobs", "4"});
  const std::int64_t id = SubmitSweep(d, d.dir().Write("asha.toml", AshaSweep(2)));
  // Never more than max_concurrent trials queued or running, promotions included: counted in
  // the store's jobs table, one query (a consistent snapshot) at each poll.
  const std::unique_ptr<store::Store> jobs = OpenStore(d);
  std::size_t most = 0;
  const json status = WaitFor(d, id, [&](const json& s) {
    const Result<std::vector<store::JobRecord>> listed = jobs->ListJobs();
    BOOST_REQUIRE(listed.ok());
    std::size_t active = 0;
    for (const store::JobRecord& job : listed.value()) {
      active += store::IsTerminal(job.state) ? 0 : 1;
    }
    most = std::max(most, active);
    return s["sweep"]["state"] != "running";
  });
  BOOST_TEST(most <= 2u);
  BOOST_TEST(status["sweep"]["reason"] == "9 trials ended: 9 succeeded", status.dump());
  const std::vector<std::vector<double>> metric = CheckAshaTrials(d, id, status, 0);
  // Each promotion resumed the job from the checkpoint of the rung below.
  const std::unique_ptr<store::Store> store = OpenStore(d);
  for (const json& t : status["trials"]) {
    const auto events = store->Events(t["job"].get<std::int64_t>());
    BOOST_REQUIRE(events.ok());
    for (int k = 0; k < t["rung"].get<int>(); ++k) {
      const std::string promoted =
          config::AshaPromotedReason(k + 1, kRungs[static_cast<std::size_t>(k + 1)]);
      const std::string paused = config::AshaPausedReason(k, kRungs[static_cast<std::size_t>(k)]);
      for (const std::string& reason : {promoted, paused}) {
        BOOST_TEST(
            std::count_if(events.value().begin(), events.value().end(),
                          [&](const store::EventRecord& e) { return e.reason == reason; }) == 1,
            "trial " << t["trial"] << ": " << reason);
      }
    }
  }
  // The leaderboard shows each trial's rung.
  const ProcessResult board = Dtrain(d, {"sweep", "status", std::to_string(id)});
  BOOST_REQUIRE_MESSAGE(board.exit_code == 0, board.err);
  BOOST_TEST(board.out.find("RUNG") != std::string::npos, board.out);
  const ProcessResult board_json = Dtrain(d, {"sweep", "status", std::to_string(id), "--json"});
  BOOST_REQUIRE_MESSAGE(board_json.exit_code == 0, board_json.err);
  const json parsed = json::parse(board_json.out);
  BOOST_TEST(parsed["rungs"].get<std::vector<std::int64_t>>() == kRungs);
  BOOST_TEST(parsed["trials"][0]["rung"] == 2, board_json.out);  // ranked: the top rung first
}

BOOST_AUTO_TEST_CASE(an_asha_sweep_killed_twice_ends_with_the_rungs_of_its_replay) {
  DaemonFixture d({"--max-jobs", "2"});
  // One trial at a time, so the rule's actions over the recorded metrics are those replayed one
  // at a time whatever the kills interrupt.
  const std::int64_t id = SubmitSweep(d, d.dir().Write("asha.toml", AshaSweep(1)));
  // dtraind SIGKILLed while a trial trains toward rung 0, then while a promoted trial trains
  // toward its next rung: each frozen there first, so that however fast the machine, the kill
  // finds it mid-rung (its workers die with the daemon, PR_SET_PDEATHSIG).
  const auto toward_first = [](const json& t) { return t["rung"].is_null(); };
  const auto promoted = [](const json& t) { return !t["rung"].is_null(); };
  for (int kill = 0; kill < 2; ++kill) {
    const bool frozen = FreezeTrial(d, id, kill == 0 ? +toward_first : +promoted);
    BOOST_REQUIRE_MESSAGE(frozen, "the sweep ended before kill " << kill);
    d.Stop(SIGKILL);
    d.Start();
  }
  const json status = WaitForEnd(d, id);
  const std::vector<std::vector<double>> metric = CheckAshaTrials(d, id, status, 2);
  BOOST_TEST(Rungs(status) == ReplayedRungs(kAsha, config::SweepGoal::kMin, metric),
             boost::test_tools::per_element());
  // The first kill came while a trial trained: it resumed from its checkpoint.
  const std::unique_ptr<store::Store> store = OpenStore(d);
  int resumed = 0;
  for (const json& t : status["trials"]) {
    const auto events = store->Events(t["job"].get<std::int64_t>());
    BOOST_REQUIRE(events.ok());
    resumed += std::any_of(
                   events.value().begin(), events.value().end(),
                   [](const store::EventRecord& e) { return e.to == store::JobState::kRecovering; })
                   ? 1
                   : 0;
  }
  BOOST_TEST(resumed >= 1);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace sweep_daemon_test
}  // namespace dtrain::testing
