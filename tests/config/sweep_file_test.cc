// The sweep file: its keys read and each refused at its place with what is allowed (a
// did-you-mean for a mistyped key), the base job inline or by path, every trial's job validated
// before the sweep starts (a problem of some trials named with the trial's values, one of all
// trials once), and the generators: a grid covers every point exactly once in the documented
// order; random search is reproducible from its seed, trial i depending only on (seed, i).
#include "config/sweep_file.h"

#include <unistd.h>

#include <boost/test/unit_test.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "config/diagnostic_checks.h"

namespace dtrain::config {
namespace sweep_file_test {

namespace fs = std::filesystem;
using testing::CheckDiagnostics;

// A tiny base job, inline: synthetic blobs (held-out test rows by default).
constexpr const char* kBase =
    "[data]\nformat = \"synthetic\"\nrows = 64\n[train]\nepochs = 1\n";  // lines 1-5

SweepLoadResult ParseSweep(const std::string& text) { return ParseSweepText(text, "s.toml", "/"); }

SweepLoadResult MustParseSweep(const std::string& text) {
  SweepLoadResult r = ParseSweep(text);
  for (const Diagnostic& d : r.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
  BOOST_REQUIRE(r.ok());
  return r;
}

// kBase and a [sweep] of `keys` (from line 6) and a parameter table `parameters` after them.
std::string Sweep(const std::string& keys, const std::string& parameters) {
  return std::string(kBase) + "[sweep]\n" + keys + "[sweep.parameters]\n" + parameters;
}

const std::string kGridKeys = "method = \"grid\"\nmetric = \"eval_accuracy\"\n";  // lines 7-8

BOOST_AUTO_TEST_SUITE(sweep_file)

BOOST_AUTO_TEST_CASE(a_grid_runs_every_point_once_last_parameter_fastest) {
  const SweepLoadResult r =
      MustParseSweep(std::string(kBase) + "[model]\ntype = \"mlp\"\n[sweep]\n" + kGridKeys +
                     "max_concurrent = 2\nseed = 5\n[sweep.parameters]\n"
                     "\"train.batch_size\" = { values = [16, 32] }\n"
                     "optimizer.lr = { values = [0.1, 0.01] }\n"
                     "\"model.hidden\" = { values = [[8], [16, 4]] }\n");
  const SweepSpec& s = *r.sweep;
  BOOST_TEST((s.method == SweepMethod::kGrid));
  BOOST_TEST(s.metric == "eval_accuracy");
  BOOST_TEST((s.goal == SweepGoal::kMax));  // accuracy rises
  BOOST_TEST(s.max_concurrent == 2);
  BOOST_TEST(s.seed == 5u);
  // By key: model.hidden, optimizer.lr, train.batch_size; the last varies fastest.
  BOOST_REQUIRE_EQUAL(r.trials.size(), 8u);
  const std::vector<std::string> expected = {
      "model.hidden=[8] optimizer.lr=0.1 train.batch_size=16",
      "model.hidden=[8] optimizer.lr=0.1 train.batch_size=32",
      "model.hidden=[8] optimizer.lr=0.01 train.batch_size=16",
      "model.hidden=[8] optimizer.lr=0.01 train.batch_size=32",
      "model.hidden=[16, 4] optimizer.lr=0.1 train.batch_size=16",
      "model.hidden=[16, 4] optimizer.lr=0.1 train.batch_size=32",
      "model.hidden=[16, 4] optimizer.lr=0.01 train.batch_size=16",
      "model.hidden=[16, 4] optimizer.lr=0.01 train.batch_size=32"};
  std::set<std::string> points;
  for (std::size_t i = 0; i < r.trials.size(); ++i) {
    const ResolvedTrial& t = r.trials[i];
    BOOST_TEST(t.trial.index == static_cast<std::int64_t>(i));
    BOOST_TEST(TrialLabel(t.trial) == expected[i]);
    points.insert(TrialLabel(t.trial));
    // The job is the base job with the trial's values.
    BOOST_TEST(t.job.train.batch_size == (i % 2 == 0 ? 16 : 32));
    BOOST_TEST(t.job.train.schedule.lr == (i / 2 % 2 == 0 ? 0.1f : 0.01f));
    BOOST_TEST(t.job.model.hidden == (i < 4 ? std::vector<int>{8} : std::vector<int>{16, 4}));
    BOOST_TEST(t.job.train.epochs == 1);
    BOOST_TEST(t.job.name == "s-t" + std::to_string(i));
  }
  BOOST_TEST(points.size() == 8u);  // every point exactly once
  BOOST_TEST(r.trials[0].trial.parameters[1].value.json == "0.1");
  BOOST_TEST(r.trials[7].trial.parameters[0].value.json == "[16, 4]");
}

BOOST_AUTO_TEST_CASE(an_int_range_is_a_grid_axis_and_max_trials_may_exceed_the_grid) {
  const SweepLoadResult r =
      MustParseSweep(Sweep(kGridKeys + "max_trials = 10\n", "\"train.seed\" = { int = [3, 5] }\n"));
  BOOST_REQUIRE_EQUAL(r.trials.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) BOOST_TEST(r.trials[i].job.train.seed == 3 + i);
}

BOOST_AUTO_TEST_CASE(random_search_is_reproducible_from_its_seed) {
  const std::string parameters =
      "\"optimizer.lr\" = { log_uniform = [1e-4, 1e-1] }\n"
      "\"train.weight_decay\" = { uniform = [0, 0.5] }\n"
      "\"train.batch_size\" = { int = [8, 64] }\n"
      "\"optimizer.type\" = { values = [\"sgd\", \"adam\", \"momentum\"] }\n";
  const auto draw = [&](int seed, int trials) {
    return MustParseSweep(Sweep(
        "method = \"random\"\nmetric = \"eval_loss\"\nmax_trials = " + std::to_string(trials) +
            "\nseed = " + std::to_string(seed) + "\n",
        parameters));
  };
  const SweepLoadResult a = draw(7, 12), again = draw(7, 12), other = draw(8, 12);
  BOOST_TEST((a.sweep->goal == SweepGoal::kMin));  // a loss falls
  BOOST_REQUIRE_EQUAL(a.trials.size(), 12u);
  std::set<std::string> labels;
  for (std::size_t i = 0; i < a.trials.size(); ++i) {
    BOOST_TEST((a.trials[i].trial == again.trials[i].trial));
    const Trial& t = a.trials[i].trial;
    labels.insert(TrialLabel(t));
    // Trial i depends only on (seed, i): not on max_trials, nor on the trials before it.
    BOOST_TEST((RandomTrial(a.sweep->parameters, 7, static_cast<std::int64_t>(i)) == t));
    const JobConfig& job = a.trials[i].job;
    BOOST_TEST(job.train.schedule.lr >= 1e-4f);
    BOOST_TEST(job.train.schedule.lr <= 1e-1f);
    BOOST_TEST(job.train.weight_decay >= 0.0f);
    BOOST_TEST(job.train.weight_decay < 0.5f);
    BOOST_TEST(job.train.batch_size >= 8);
    BOOST_TEST(job.train.batch_size <= 64);
  }
  BOOST_TEST(labels.size() == 12u);  // continuous draws do not repeat
  const SweepLoadResult fewer = draw(7, 5);
  for (std::size_t i = 0; i < fewer.trials.size(); ++i) {
    BOOST_TEST((fewer.trials[i].trial == a.trials[i].trial));
  }
  std::size_t same = 0;
  for (std::size_t i = 0; i < a.trials.size(); ++i) {
    same += a.trials[i].trial.parameters == other.trials[i].trial.parameters ? 1 : 0;
  }
  BOOST_TEST(same == 0u);
  // Every listed value is drawn over enough trials.
  std::set<std::string> types;
  for (std::int64_t i = 0; i < 60; ++i) {
    types.insert(RandomTrial(a.sweep->parameters, 7, i).parameters[1].value.toml);
  }
  BOOST_TEST(types.size() == 3u);
}

BOOST_AUTO_TEST_CASE(the_base_job_may_be_a_file_beside_the_sweep_file) {
  const fs::path dir = fs::temp_directory_path() / ("sweep_test_" + std::to_string(::getpid()));
  fs::create_directories(dir / "jobs");
  std::ofstream(dir / "jobs" / "base.toml") << kBase;
  const std::string sweep = "job = \"jobs/base.toml\"\n[sweep]\n" + kGridKeys +
                            "[sweep.parameters]\n\"train.batch_size\" = { values = [4, 8] }\n";
  std::ofstream(dir / "s.toml") << sweep;
  const SweepLoadResult r = LoadSweepFile((dir / "s.toml").string());
  for (const Diagnostic& d : r.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
  BOOST_REQUIRE(r.ok());
  BOOST_REQUIRE_EQUAL(r.trials.size(), 2u);
  BOOST_TEST(r.trials[1].job.train.batch_size == 8);
  BOOST_TEST(r.trials[1].job.name == "base-t1");

  // A problem of the base job is at its place in the job file, once.
  std::ofstream(dir / "jobs" / "base.toml") << kBase << "bogus = 1\n";
  CheckDiagnostics(LoadSweepFile((dir / "s.toml").string()),
                   {{(dir / "jobs" / "base.toml").string(), 6, 1, "train.bogus", "unknown key"}});
  // Job keys beside job = are refused; a missing file is named.
  CheckDiagnostics(
      ParseSweepText("job = \"base.toml\"\n[train]\nepochs = 2\n[sweep]\n" + kGridKeys +
                         "[sweep.parameters]\n\"train.seed\" = { "
                         "values = [1] }\n",
                     "s.toml", (dir / "jobs").string()),
      {{"s.toml", 2, 1, "train", "is a job key, but the base job is the file job"}});
  CheckDiagnostics(ParseSweepText("job = \"nope.toml\"\n[sweep]\n" + kGridKeys +
                                      "[sweep.parameters]\n\"train.seed\" = { values = [1] }\n",
                                  "s.toml", dir.string()),
                   {{"s.toml", 1, 7, "job", "cannot read the base job file"}});
  fs::remove_all(dir);
}

// A sweep submitted to a daemon comes with its base job file's text: no file is read there.
BOOST_AUTO_TEST_CASE(a_submitted_sweep_takes_its_base_jobs_text_and_reads_no_file) {
  const std::string sweep = "job = \"jobs/base.toml\"\n[sweep]\n" + kGridKeys +
                            "[sweep.parameters]\n\"train.batch_size\" = { values = [4, 8] }\n";
  // No such file anywhere: the text given stands for it.
  const SweepLoadResult r =
      ParseSubmittedSweep(sweep, kBase, "/nowhere/s.toml", "/nowhere", {DataFiles::kUnchecked});
  for (const Diagnostic& d : r.diagnostics) BOOST_TEST_MESSAGE(FormatDiagnostic(d));
  BOOST_REQUIRE(r.ok());
  BOOST_REQUIRE_EQUAL(r.trials.size(), 2u);
  BOOST_TEST(r.trials[1].job.train.batch_size == 8);
  BOOST_TEST(r.sweep->job_path == "/nowhere/jobs/base.toml");
  // The same trials as the file read from disk would give; an inline job ignores the text.
  const SweepLoadResult inline_job =
      ParseSubmittedSweep(Sweep(kGridKeys, "\"train.batch_size\" = { values = [4, 8] }\n"), "",
                          "s.toml", "/", {DataFiles::kUnchecked});
  BOOST_REQUIRE(inline_job.ok());
  BOOST_TEST(inline_job.trials.size() == 2u);
  // A sweep naming a file sent without its text is refused at job =.
  CheckDiagnostics(ParseSubmittedSweep(sweep, "", "s.toml", "/", {DataFiles::kUnchecked}),
                   {{"s.toml", 1, 7, "job", "its text did not come with the sweep"}});
}

BOOST_AUTO_TEST_CASE(every_trial_is_validated_and_a_bad_one_is_named_by_its_values) {
  // lr 2000 is out of range: only that trial, at the parameter's key.
  CheckDiagnostics(ParseSweep(Sweep(kGridKeys, "\"optimizer.lr\" = { values = [0.1, 2000] }\n")),
                   {{"s.toml", 10, 1, "optimizer.lr",
                     "trial 1 (optimizer.lr=2000): must be a number in (0, 1000]"}});
  // A trial that contradicts the base job: at the base job's key, named by the trial.
  CheckDiagnostics(
      ParseSweep("[data]\nformat = \"synthetic\"\n[optimizer]\nmin_lr = 0.05\n[sweep]\n" +
                 kGridKeys + "[sweep.parameters]\n\"optimizer.lr\" = { values = [0.1, 0.01] }\n"),
      {{"s.toml", 4, 10, "optimizer.min_lr", "trial 1 (optimizer.lr=0.01): must not exceed"}});
  // What every trial has is said once, without a trial.
  CheckDiagnostics(ParseSweep(Sweep(kGridKeys, "\"optimizer.lrr\" = { values = [0.1, 0.2] }\n")),
                   {{"s.toml", 10, 1, "optimizer.lrr", "unknown key; did you mean 'lr'?"}});
  CheckDiagnostics(ParseSweep(Sweep(kGridKeys, "\"optimiser.lr\" = { values = [0.1, 0.2] }\n")),
                   {{"s.toml", 10, 1, "optimiser", "unknown section"}});
  CheckDiagnostics(
      ParseSweep("[data]\nformat = \"synthetic\"\nsynthetic = \"linear\"\n[model]\ntype = "
                 "\"mlp\"\n[sweep]\n" +
                 kGridKeys + "[sweep.parameters]\n\"train.seed\" = { values = [1, 2] }\n"),
      {{"s.toml", 8, 10, "sweep.metric", "\"eval_accuracy\" is recorded by classification"}});
}

BOOST_AUTO_TEST_CASE(each_sweep_key_is_refused_at_its_place_with_what_is_allowed) {
  const std::string p = "\"train.seed\" = { values = [1, 2] }\n";
  const auto check = [&](const std::string& keys, int line, int column, const std::string& key,
                         const std::string& part) {
    BOOST_TEST_CONTEXT(keys) {
      CheckDiagnostics(ParseSweep(Sweep(keys, p)), {{"s.toml", line, column, key, part}});
    }
  };
  check("method = \"grdi\"\nmetric = \"eval_loss\"\n", 7, 10, "sweep.method",
        "did you mean \"grid\"");
  check("metric = \"eval_loss\"\n", 6, 1, "sweep.method", "is required: grid, random or asha");
  check("method = \"grid\"\n", 6, 1, "sweep.metric", "is required");
  check("method = \"grid\"\nmetric = \"accuracy\"\n", 8, 10, "sweep.metric",
        "eval_accuracy, eval_loss, eval_mse, train_loss");
  check(kGridKeys + "goal = \"up\"\n", 9, 8, "sweep.goal", "max, min");
  check(kGridKeys + "max_trials = 0\n", 9, 14, "sweep.max_trials", "[1, 1000]");
  check(kGridKeys + "max_trials = 1\n", 9, 14, "sweep.max_trials", "less than the grid's 2 points");
  check(kGridKeys + "max_concurrent = 0\n", 9, 18, "sweep.max_concurrent", "1");
  check(kGridKeys + "seed = -1\n", 9, 8, "sweep.seed", "");
  check(kGridKeys + "max_trial = 3\n", 9, 1, "sweep.max_trial", "did you mean 'max_trials'?");
  check(kGridKeys + "min_steps = 3\n", 9, 13, "sweep.min_steps",
        "is only used with method = \"asha\"");
  check("method = \"random\"\nmetric = \"eval_loss\"\n", 6, 1, "sweep.max_trials",
        "is required for method = \"random\"");
  check("method = \"asha\"\nmetric = \"eval_loss\"\nmax_trials = 4\nmax_steps = 9\n", 6, 1,
        "sweep.min_steps", "is required for method = \"asha\"");
  check("method = \"asha\"\nmetric = \"eval_loss\"\nmax_trials = 4\nmin_steps = 9\nmax_steps = 9\n",
        11, 13, "sweep.max_steps", "must be greater than sweep.min_steps (9)");
  check(
      "method = \"asha\"\nmetric = \"eval_loss\"\nmax_trials = 4\nmin_steps = 1\nmax_steps = "
      "9\nreduction_factor = 1\n",
      12, 20, "sweep.reduction_factor", "[2, 100]");
  // The trials times the base job's text (here the whole inline file) is bounded: 1,000
  // trials of a file of about 5,100 bytes are refused, 500 load.
  const std::string padding = "# " + std::string(5000, 'x') + "\n";
  const auto padded = [&](std::int64_t trials) {
    return padding + Sweep("method = \"random\"\nmetric = \"eval_loss\"\nmax_trials = " +
                               std::to_string(trials) + "\n",
                           p);
  };
  CheckDiagnostics(
      ParseSweepText(padded(1'000), "s.toml", "/"),
      {{"s.toml", 10, 14, "sweep.max_trials", "more than 4 MiB of job text to validate"}});
  BOOST_TEST(ParseSweepText(padded(500), "s.toml", "/").trials.size() == 500u);
  // ASHA's keys read.
  const SweepLoadResult asha = MustParseSweep(
      Sweep("method = \"asha\"\nmetric = \"eval_loss\"\nmax_trials = 4\nmin_steps = 2\n"
            "max_steps = 18\n",
            p));
  BOOST_TEST((asha.sweep->method == SweepMethod::kAsha));
  BOOST_TEST(asha.sweep->asha.min_steps == 2);
  BOOST_TEST(asha.sweep->asha.max_steps == 18);
  BOOST_TEST(asha.sweep->asha.reduction_factor == 3);
  BOOST_TEST(asha.trials.size() == 4u);
  // Each trial's job trains to the first rung: train.steps = min_steps, no epoch limit.
  for (const ResolvedTrial& t : asha.trials) {
    BOOST_TEST(t.job.train.steps == 2);
    BOOST_TEST(t.job.train.epochs == 0);
  }
  // The rungs set train.steps and train.epochs: no parameter may vary them.
  CheckDiagnostics(ParseSweep(Sweep("method = \"asha\"\nmetric = \"eval_loss\"\nmax_trials = 4\n"
                                    "min_steps = 2\nmax_steps = 18\n",
                                    "\"train.steps\" = { values = [5, 9] }\n")),
                   {{"s.toml", 13, 1, "sweep.parameters.train.steps", "is set by ASHA's rungs"}});
  CheckDiagnostics(ParseSweep(kBase), {{"s.toml", 1, 1, "sweep", "is required"}});
  CheckDiagnostics(ParseSweep(std::string(kBase) + "[sweeps]\n" + kGridKeys),
                   {{"s.toml", 6, 2, "sweeps", "unknown section; did you mean 'sweep'?"}});
  CheckDiagnostics(ParseSweep(std::string(kBase) + "[sweep]\n" + kGridKeys),
                   {{"s.toml", 6, 1, "sweep.parameters", "is required"}});
}

BOOST_AUTO_TEST_CASE(each_parameter_is_refused_at_its_place_with_what_is_allowed) {
  const auto check = [&](const std::string& keys, const std::string& parameter, int line,
                         int column, const std::string& key, const std::string& part) {
    BOOST_TEST_CONTEXT(parameter) {
      CheckDiagnostics(ParseSweep(Sweep(keys, parameter)), {{"s.toml", line, column, key, part}});
    }
  };
  const std::string random = "method = \"random\"\nmetric = \"eval_loss\"\nmax_trials = 2\n";
  check(kGridKeys, "\"train.seed\" = 3\n", 10, 1, "sweep.parameters.train.seed",
        "must be a table with one of values, uniform, log_uniform, int");
  check(kGridKeys, "\"train.seed\" = { value = [1] }\n", 10, 18,
        "sweep.parameters.train.seed.value", "unknown key; did you mean 'values'?");
  check(kGridKeys, "\"train.seed\" = { values = [1], valuess = 2 }\n", 10, 32,
        "sweep.parameters.train.seed.valuess", "did you mean 'values'?");
  check(kGridKeys, "\"train.seed\" = { values = [1], int = [1, 2] }\n", 10, 38,
        "sweep.parameters.train.seed.int", "conflicts with values");
  check(kGridKeys, "\"train.seed\" = { values = [] }\n", 10, 27,
        "sweep.parameters.train.seed.values", "must be a non-empty array");
  check(kGridKeys, "\"train.seed\" = { values = [{ a = 1 }] }\n", 10, 28,
        "sweep.parameters.train.seed.values", "value 1 must be a finite number, string, boolean");
  check(random, "\"optimizer.lr\" = { uniform = [0.1, 0.1] }\n", 11, 30,
        "sweep.parameters.optimizer.lr.uniform", "low < high, got [0.1, 0.1]");
  check(random, "\"optimizer.lr\" = { log_uniform = [0, 0.1] }\n", 11, 34,
        "sweep.parameters.optimizer.lr.log_uniform", "0 < low < high");
  check(random, "\"optimizer.lr\" = { uniform = [\"a\", 1] }\n", 11, 30,
        "sweep.parameters.optimizer.lr.uniform", "two finite numbers");
  check(random, "\"train.seed\" = { int = [1.5, 4] }\n", 11, 24, "sweep.parameters.train.seed.int",
        "two integers");
  check(kGridKeys, "\"optimizer.lr\" = { log_uniform = [1e-4, 1e-1] }\n", 7, 10, "sweep.method",
        "sweep.parameters.optimizer.lr is a range to draw from");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace sweep_file_test
}  // namespace dtrain::config
