// Loading a sweep file (man dtrain-sweep.toml(5)): a base job, inline (the job's own tables at
// the top level) or `job = "path.toml"` (relative to the sweep file), plus [sweep]: the method,
// the metric and its goal, the trial counts, the seed, ASHA's keys and [sweep.parameters]. The
// loader generates every trial (sweep_trials.h) and validates its job, the base job with the
// trial's values applied as --set overrides: a sweep file loads only when every trial would
// start.
//
//   SweepLoadResult r = LoadSweepFile("lr.sweep.toml", {config::DataFiles::kCheck});
//   if (!r.ok()) { for (const Diagnostic& d : r.diagnostics) std::cerr << FormatDiagnostic(d); }
//   for (const ResolvedTrial& t : r.trials) Run(t.job);
//
// Problems are reported like the job file's (file:line:col, a did-you-mean for a mistyped key).
// A base-job problem is reported once at its place; a problem only some trials have is reported
// per trial, prefixed with "trial N (key=value ...)", at the value's place (a parameter's value
// at its key in [sweep.parameters]). No exception escapes. Safe for concurrent use.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/job.h"
#include "config/job_file.h"
#include "config/sweep_trials.h"

namespace dtrain::config {

enum class SweepMethod { kGrid, kRandom, kAsha };
enum class SweepGoal { kMax, kMin };

std::string_view SweepMethodName(SweepMethod method);
std::string_view SweepGoalName(SweepGoal goal);

// The metrics a sweep may rank by: what the trainers record (eval_* at each evaluation).
inline constexpr std::string_view kSweepMetrics = "eval_accuracy, eval_loss, eval_mse, train_loss";

inline constexpr std::int64_t kMaxSweepTrials = 1'000;
// Each trial's job is validated by parsing the base job's text again: the trials times that
// text's size (the whole sweep file for an inline base job) may not pass this, so that a sweep
// file loads in about a second however it is written (1,000 trials of a 4 KiB job).
inline constexpr std::int64_t kMaxSweepJobBytes = std::int64_t{4} << 20;

// ASHA's rungs: a trial trains min_steps, then the best 1/reduction_factor go on to
// min_steps * reduction_factor, ... up to max_steps.
struct AshaOptions {
  std::int64_t min_steps = 0;
  std::int64_t max_steps = 0;
  std::int64_t reduction_factor = 3;
};

struct SweepSpec {
  std::string path;  // the sweep file, as given
  // The base job: the TOML text holding it, the top-level key of that text that is not the
  // job's ("sweep" for an inline job), its name in diagnostics and the directory its relative
  // paths resolve against.
  std::string job_text, job_without, job_path, job_dir;
  SweepMethod method = SweepMethod::kRandom;
  std::string metric;  // one of kSweepMetrics
  SweepGoal goal = SweepGoal::kMax;
  std::int64_t max_trials = 0;  // 0: not given (a grid runs every point)
  std::int64_t max_concurrent = 1;
  std::uint64_t seed = 0;
  AshaOptions asha;                        // method = "asha" only
  std::vector<SweepParameter> parameters;  // by key
};

struct ResolvedTrial {
  Trial trial;
  JobConfig job;  // validated; named "<base name>-t<index>"
};

struct SweepLoadResult {
  std::optional<SweepSpec> sweep;  // set exactly when diagnostics is empty
  std::vector<Diagnostic> diagnostics;
  std::vector<ResolvedTrial> trials;  // every trial, in order

  bool ok() const { return sweep.has_value(); }
};

SweepLoadResult LoadSweepFile(const std::string& path, const JobChecks& checks = {});

// The same for text in memory: `display_path` names it, relative paths (job = and the inline
// job's data files) resolve against `base_dir`.
SweepLoadResult ParseSweepText(std::string_view text, const std::string& display_path,
                               const std::string& base_dir, const JobChecks& checks = {});

// The same for a sweep submitted to a daemon, which reads no file for it: `job_text` is the text
// of the base job file the sweep names (job = "..."), as the submitter read it; empty for an
// inline base job. A sweep that names a file without its text is refused.
SweepLoadResult ParseSubmittedSweep(std::string_view text, std::string_view job_text,
                                    const std::string& display_path, const std::string& base_dir,
                                    const JobChecks& checks);

// The trials the sweep runs: grid, every point; random and asha, max_trials draws.
std::vector<Trial> SweepTrials(const SweepSpec& sweep);

// The direction a metric improves in (train::HigherIsBetter): max for accuracies and AUCs, min
// for the rest (losses, mse). A sweep's goal when it names none.
SweepGoal NaturalGoal(std::string_view metric);

// Whether `a` ranks before `b` under the goal (a NaN ranks last).
bool Better(SweepGoal goal, double a, double b);

}  // namespace dtrain::config
