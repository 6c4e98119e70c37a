#include "config/sweep_file.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <utility>

#include "config/embedded_job.h"
#include "config/suggest.h"
#include "config/sweep_asha.h"
#include "config/sweep_parameters.h"
#include "config/toml_reader.h"
#include "config/toml_text.h"
#include "core/train/metrics.h"

namespace dtrain::config {
namespace {

namespace fs = std::filesystem;
using internal::Describe;
using internal::kOverrideFile;
using internal::ParseDocument;
using internal::ReadParameter;
using internal::ReadParameters;
using internal::ReadWholeFile;
using internal::RejectUnknown;
using internal::SectionTable;
using internal::Sink;
using internal::TableReader;

constexpr std::int64_t kMaxConcurrent = 1024;
constexpr std::int64_t kMaxReduction = 100;
constexpr std::int64_t kMaxSteps = 10'000'000'000;

// method, metric, goal, counts, seed and ASHA's keys of [sweep].
void ReadSweepKeys(TableReader& r, SweepSpec* s) {
  std::string method;
  if (r.OneOf("method", "grid, random, asha", &method) != nullptr) {
    s->method = method == "grid"   ? SweepMethod::kGrid
                : method == "asha" ? SweepMethod::kAsha
                                   : SweepMethod::kRandom;
  } else if (!r.Present("method")) {
    r.Missing("method", "is required: grid, random or asha");
  }
  if (r.OneOf("metric", kSweepMetrics, &s->metric) == nullptr && !r.Present("metric")) {
    r.Missing("metric",
              "is required: the metric trials are ranked by (" + std::string(kSweepMetrics) + ")");
  }
  s->goal = NaturalGoal(s->metric);
  std::string goal;
  if (r.OneOf("goal", "max, min", &goal) != nullptr) {
    s->goal = goal == "max" ? SweepGoal::kMax : SweepGoal::kMin;
  }
  r.Int("max_trials", 1, kMaxSweepTrials, &s->max_trials);
  r.Int("max_concurrent", 1, kMaxConcurrent, &s->max_concurrent);
  r.Int("seed", 0, std::numeric_limits<std::int64_t>::max(), &s->seed);
  const bool asha = s->method == SweepMethod::kAsha && !r.Failed("method");
  const toml::node* min_steps = r.Int("min_steps", 1, kMaxSteps, &s->asha.min_steps);
  const toml::node* max_steps = r.Int("max_steps", 1, kMaxSteps, &s->asha.max_steps);
  const toml::node* factor = r.Int("reduction_factor", 2, kMaxReduction, &s->asha.reduction_factor);
  if (!asha) {
    for (const auto& [key, node] : {std::pair{"min_steps", min_steps},
                                    {"max_steps", max_steps},
                                    {"reduction_factor", factor}}) {
      if (node != nullptr && !r.Failed("method")) {
        r.Report(*node, key, "is only used with method = \"asha\"");
      }
    }
    return;
  }
  if (!r.Present("min_steps"))
    r.Missing("min_steps", "is required for method = \"asha\" (the first rung)");
  if (!r.Present("max_steps"))
    r.Missing("max_steps", "is required for method = \"asha\" (the last rung)");
  if (min_steps != nullptr && max_steps != nullptr && s->asha.max_steps <= s->asha.min_steps) {
    r.Report(*max_steps, "max_steps",
             "must be greater than sweep.min_steps (" + std::to_string(s->asha.min_steps) +
                 "), got " + std::to_string(s->asha.max_steps));
  }
}

// The trial count against the method: a grid's size, random and asha's max_trials.
void CheckTrialCount(TableReader& r, const std::vector<ReadParameter>& read, SweepSpec* s) {
  if (s->method != SweepMethod::kGrid) {
    if (!r.Present("max_trials")) {
      r.Missing("max_trials", "is required for method = \"" +
                                  std::string(SweepMethodName(s->method)) +
                                  "\" (the number of trials to draw)");
    }
    return;
  }
  bool enumerable = true;
  for (const ReadParameter& p : read) {
    if (Enumerable(p.parameter)) continue;
    enumerable = false;
    r.Report(*r.Find("method"), "method",
             "\"grid\" lists its points, but sweep.parameters." + p.parameter.key +
                 " is a range to draw from: give it { values = [...] } or { int = [a, b] }, or "
                 "use method = \"random\"");
  }
  if (!enumerable || r.Failed("max_trials")) return;
  const std::int64_t size = GridSize(s->parameters, kMaxSweepTrials);
  if (size > kMaxSweepTrials) {
    r.Report(
        *r.Find("method"), "method",
        "the grid has more than " + std::to_string(kMaxSweepTrials) + " points: list fewer values");
  } else if (const toml::node* max = r.Find("max_trials"); max != nullptr && s->max_trials < size) {
    r.Report(*max, "max_trials",
             "is " + std::to_string(s->max_trials) + ", less than the grid's " +
                 std::to_string(size) +
                 " points: a grid runs every point; list fewer values or leave max_trials out");
  }
}

// The trials times the base job's text, which each trial's validation parses again, against
// kMaxSweepJobBytes; blamed on max_trials for a random or ASHA sweep, on method for a grid.
void CheckValidationWork(TableReader& r, const SweepSpec& s) {
  const bool grid = s.method == SweepMethod::kGrid;
  const std::int64_t trials = grid ? GridSize(s.parameters, kMaxSweepTrials) : s.max_trials;
  const auto bytes = static_cast<std::int64_t>(s.job_text.size());
  if (trials <= 0 || bytes <= kMaxSweepJobBytes / trials) return;
  const char* key = grid ? "method" : "max_trials";
  r.Report(*r.Find(key), key,
           "makes " + std::to_string(trials) + " trials of a " + std::to_string(bytes) +
               "-byte base job, more than " + std::to_string(kMaxSweepJobBytes >> 20) +
               " MiB of job text to validate (trials times the base job's size): run fewer "
               "trials or shorten the base job");
}

// What a trial must record for the sweep's metric; empty when it does.
std::string MetricProblem(const JobConfig& job, const std::string& metric) {
  if (metric == "train_loss") return "";
  const DataConfig& d = job.data;
  if (d.format == DataFormat::kSynthetic ? d.test_rows == 0
                                         : d.test.empty() && d.validation_fraction == 0) {
    return "\"" + metric +
           "\" needs held-out data in the job: data.test, data.validation_fraction > 0, or "
           "data.test_rows > 0 for synthetic data";
  }
  const bool regression = !d.sparse && job.model.loss == model::LossType::kMeanSquaredError;
  if (regression && metric != "eval_mse") {
    return "\"" + metric +
           "\" is recorded by classification models; this one is trained with "
           "loss \"mse\": use \"eval_mse\"";
  }
  if (!regression && metric == "eval_mse") {
    return "\"eval_mse\" is recorded by regression models (loss \"mse\"): use \"eval_loss\" or "
           "\"eval_accuracy\"";
  }
  return "";
}

std::string TrialName(const std::string& base, std::int64_t index) {
  const std::string suffix = "-t" + std::to_string(index);
  return base.substr(0, std::min<std::size_t>(base.size(), 64 - suffix.size())) + suffix;
}

// Every trial's job validated; the problems every trial has go to *problems once, the others
// per trial; those of an override are moved to its parameter's place.
std::vector<ResolvedTrial> ResolveTrials(const SweepSpec& s, const std::vector<ReadParameter>& read,
                                         const toml::node* metric_node, const JobChecks& checks,
                                         std::vector<Diagnostic>* problems) {
  std::vector<ResolvedTrial> resolved;
  std::vector<std::pair<Trial, std::vector<Diagnostic>>> failed;
  std::map<std::string, std::size_t> seen;  // formatted diagnostic -> trials that have it
  const std::vector<Trial> trials = SweepTrials(s);
  for (const Trial& trial : trials) {
    std::vector<std::string> overrides = TrialOverrides(trial);
    if (s.method == SweepMethod::kAsha) {
      for (std::string& o : AshaRungOverrides(s.asha.min_steps)) overrides.push_back(std::move(o));
    }
    LoadResult job = internal::ParseEmbeddedJob(s.job_text, s.job_without, s.job_path, overrides,
                                                s.job_dir, checks);
    if (job.ok() && metric_node != nullptr) {
      if (std::string problem = MetricProblem(*job.job, s.metric); !problem.empty()) {
        job.diagnostics.push_back({s.path, static_cast<int>(metric_node->source().begin.line),
                                   static_cast<int>(metric_node->source().begin.column),
                                   "sweep.metric", std::move(problem)});
      }
    }
    for (Diagnostic& d : job.diagnostics) {
      if (d.file != kOverrideFile) continue;
      for (const ReadParameter& p : read) {
        if (d.key == p.parameter.key || d.key.starts_with(p.parameter.key + ".") ||
            p.parameter.key.starts_with(d.key + ".")) {
          d = {s.path, p.line, p.column, d.key, d.message};
        }
      }
    }
    if (job.diagnostics.empty()) {
      job.job->name = TrialName(job.job->name, trial.index);
      resolved.push_back({trial, std::move(*job.job)});
      continue;
    }
    for (const Diagnostic& d : job.diagnostics) ++seen[FormatDiagnostic(d)];
    failed.emplace_back(trial, std::move(job.diagnostics));
  }
  std::set<std::string> reported;
  for (const auto& [trial, diagnostics] : failed) {
    for (const Diagnostic& d : diagnostics) {
      const std::string text = FormatDiagnostic(d);
      if (seen[text] == trials.size()) {
        if (reported.insert(text).second) problems->push_back(d);
      } else {
        problems->push_back({d.file, d.line, d.column, d.key,
                             "trial " + std::to_string(trial.index) + " (" + TrialLabel(trial) +
                                 "): " + d.message});
      }
    }
  }
  return resolved;
}

// The base job: this file's own tables, or the file `job = "..."` names (its text `given` when
// set: then no file is read).
bool ReadBaseJob(TableReader& top, std::string_view text, const std::string& display_path,
                 const std::string& base_dir, std::optional<std::string_view> given, SweepSpec* s) {
  std::string ref;
  const toml::node* job = top.String("job", &ref);
  if (job == nullptr) {
    if (top.Failed("job")) return false;
    s->job_text = std::string(text);
    s->job_without = "sweep";
    s->job_path = display_path;
    s->job_dir = base_dir;
    return true;
  }
  bool ok = true;
  for (auto&& [key, node] : *top.table()) {
    if (key.str() == "job" || key.str() == "sweep") continue;
    top.Report(node, key.str(),
               "is a job key, but the base job is the file job = " + TomlString(ref) +
                   ": set it there, or as a sweep parameter");
    ok = false;
  }
  if (ref.empty()) {
    top.Report(*job, "job", "must name the base job's file, got an empty string");
    return false;
  }
  const fs::path relative(ref);
  const fs::path shown =
      relative.is_absolute() ? relative : (fs::path(display_path).parent_path() / relative);
  const fs::path read = relative.is_absolute() ? relative : (fs::path(base_dir) / relative);
  std::string problem;
  if (given) {
    if (given->empty()) {
      top.Report(*job, "job", "names a file, but its text did not come with the sweep");
      return false;
    }
    s->job_text = std::string(*given);
  } else if (!ReadWholeFile(read.lexically_normal().string(), "the base job file", &s->job_text,
                            &problem)) {
    top.Report(*job, "job", problem);
    return false;
  }
  s->job_path = shown.lexically_normal().string();
  s->job_dir = read.lexically_normal().parent_path().string();
  return ok;
}

SweepLoadResult Load(std::string_view text, const std::string& display_path,
                     const std::string& base_dir, std::optional<std::string_view> given_job,
                     const JobChecks& checks) {
  Sink sink(display_path);
  std::optional<toml::table> root = ParseDocument(text, display_path, sink);
  if (!root) return {std::nullopt, std::move(sink).Take(), {}};
  SweepSpec s;
  s.path = display_path;
  TableReader top(&*root, "", sink);
  const bool base_read = ReadBaseJob(top, text, display_path, base_dir, given_job, &s);
  TableReader sweep(SectionTable(top, "sweep"), "sweep", sink);
  if (!top.Present("sweep")) {
    const std::string_view sweep_names[] = {"sweep"};
    std::string near;
    for (auto&& [key, node] : *root) {
      if (!ClosestName(key.str(), sweep_names).empty()) {
        sink.AtKey(key, node, std::string(key.str()), "unknown section; did you mean 'sweep'?");
        near = std::string(key.str());
      }
    }
    if (near.empty()) {
      top.Missing("sweep", "is required: the [sweep] table with method, metric and parameters");
    }
    return {std::nullopt, std::move(sink).Take(), {}};
  }
  ReadSweepKeys(sweep, &s);
  std::deque<TableReader> specs;
  std::vector<ReadParameter> read;
  if (const toml::node* parameters = sweep.Find("parameters")) {
    const toml::table* table = parameters->as_table();
    if (table == nullptr || table->empty()) {
      sweep.Report(*parameters, "parameters",
                   "must be a table of job keys to vary, such as [sweep.parameters] "
                   "\"optimizer.lr\" = { log_uniform = [1e-4, 1e-1] }, got " +
                       Describe(*parameters));
    } else {
      ReadParameters(*table, "", specs, sink, &read);
    }
  } else {
    sweep.Missing("parameters", "is required: [sweep.parameters], the job keys to vary");
  }
  std::sort(read.begin(), read.end(), [](const ReadParameter& a, const ReadParameter& b) {
    return a.parameter.key < b.parameter.key;
  });
  for (const ReadParameter& p : read) {
    s.parameters.push_back(p.parameter);
    if (s.method == SweepMethod::kAsha && std::find(std::begin(kAshaKeys), std::end(kAshaKeys),
                                                    p.parameter.key) != std::end(kAshaKeys)) {
      sink.InFile(p.line, p.column, "sweep.parameters." + p.parameter.key,
                  "is set by ASHA's rungs (sweep.min_steps .. sweep.max_steps): vary other keys");
    }
  }
  if (sink.size() == 0) CheckTrialCount(sweep, read, &s);
  if (sink.size() == 0 && base_read) CheckValidationWork(sweep, s);

  std::vector<const TableReader*> readers = {&sweep};
  for (const TableReader& r : specs) readers.push_back(&r);
  RejectUnknown(readers, sink);
  if (sink.size() > 0 || !base_read) return {std::nullopt, std::move(sink).Take(), {}};

  std::vector<Diagnostic> problems;
  std::vector<ResolvedTrial> trials =
      ResolveTrials(s, read, sweep.Find("metric"), checks, &problems);
  if (!problems.empty()) return {std::nullopt, std::move(problems), {}};
  return {std::move(s), {}, std::move(trials)};
}

// internal::Guarded for a SweepLoadResult: any exception (an allocation failure) as a diagnostic.
template <typename F>
SweepLoadResult Guard(const std::string& file, F&& load) {
  try {
    return load();
  } catch (const std::exception& e) {
    return {
        std::nullopt, {Diagnostic{file, 0, 0, "", std::string("internal error: ") + e.what()}}, {}};
  }
}

}  // namespace

std::string_view SweepMethodName(SweepMethod method) {
  switch (method) {
    case SweepMethod::kGrid:
      return "grid";
    case SweepMethod::kAsha:
      return "asha";
    case SweepMethod::kRandom:
      break;
  }
  return "random";
}

std::string_view SweepGoalName(SweepGoal goal) { return goal == SweepGoal::kMax ? "max" : "min"; }

std::vector<Trial> SweepTrials(const SweepSpec& sweep) {
  if (sweep.method == SweepMethod::kGrid) return GridTrials(sweep.parameters);
  std::vector<Trial> trials;
  for (std::int64_t i = 0; i < sweep.max_trials; ++i) {
    trials.push_back(RandomTrial(sweep.parameters, sweep.seed, i));
  }
  return trials;
}

SweepGoal NaturalGoal(std::string_view metric) {
  return train::HigherIsBetter(metric) ? SweepGoal::kMax : SweepGoal::kMin;
}

bool Better(SweepGoal goal, double a, double b) {
  if (std::isnan(a)) return false;
  if (std::isnan(b)) return true;
  return goal == SweepGoal::kMax ? a > b : a < b;
}

SweepLoadResult ParseSweepText(std::string_view text, const std::string& display_path,
                               const std::string& base_dir, const JobChecks& checks) {
  return Guard(display_path, [&]() -> SweepLoadResult {
    std::error_code ec;
    return Load(text, display_path, fs::absolute(fs::path(base_dir), ec).string(), std::nullopt,
                checks);
  });
}

SweepLoadResult ParseSubmittedSweep(std::string_view text, std::string_view job_text,
                                    const std::string& display_path, const std::string& base_dir,
                                    const JobChecks& checks) {
  return Guard(display_path, [&]() -> SweepLoadResult {
    return Load(text, display_path, base_dir, job_text, checks);
  });
}

SweepLoadResult LoadSweepFile(const std::string& path, const JobChecks& checks) {
  return Guard(path, [&]() -> SweepLoadResult {
    std::string text, problem;
    if (!ReadWholeFile(path, "the sweep file", &text, &problem)) {
      return {std::nullopt, {Diagnostic{path, 0, 0, "", problem}}, {}};
    }
    std::error_code ec;
    return Load(text, path, fs::absolute(fs::path(path), ec).parent_path().string(), std::nullopt,
                checks);
  });
}

}  // namespace dtrain::config
