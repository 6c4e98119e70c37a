// What `dtrain compare` shows of several jobs' runs of one metric: each job's curve summed up
// (its final value, its best by the metric's direction and the step of the best) beside the
// settings in which the jobs differ, as a table for people or as one JSON object.
//
//   Comparison c{"eval_accuracy", config::NaturalGoal("eval_accuracy"), jobs, differing};
//   PrintComparison(std::cout, c, ColorOnStdout());
//   std::cout << ComparisonJson(c, /*with_points=*/false).dump() << '\n';
//
// Pure functions plus printing: one thread at a time per stream.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "config/job_settings.h"
#include "config/sweep_file.h"

namespace dtrain::cli {

using Curve = std::vector<std::pair<double, double>>;  // (step, value), by step

struct ComparedJob {
  std::int64_t id = 0;
  std::string name;
  std::string state;
  std::int64_t steps = 0;
  Curve curve;  // the metric: the workers' mean at each step (job_reader.h, MeanByStep)
};

// A curve's last point, and its best: the first point no other is Better than (a NaN only when
// every value is NaN). Both empty for an empty curve.
struct CurveSummary {
  std::optional<std::pair<double, double>> final_point, best_point;
};
CurveSummary Summarize(const Curve& curve, config::SweepGoal goal);

// Settings (config/job_settings.h) that a comparison leaves out: `name`, shown in its own column.
bool ShownApart(const std::string& key);

struct Comparison {
  std::string metric;
  config::SweepGoal goal = config::SweepGoal::kMax;
  std::vector<ComparedJob> jobs;
  // The differing settings, a value per job in the order of `jobs` (nullopt: the job lacks it).
  std::map<std::string, std::vector<std::optional<config::ParameterValue>>> differing;
};

// Up to this many differing settings are columns of the jobs' table; more make a table of
// their own, a row per key and a column per job.
inline constexpr std::size_t kMaxSettingColumns = 4;

// {"metric", "goal", "jobs": [{"id", "name", "state", "steps", "final", "best", "best_step"
// (null without a point; a value as the metrics' JSON writes it), "points": [[STEP, VALUE]...]
// with `with_points`}], "differing": {KEY: [VALUE per job, null where a job lacks it]}}.
nlohmann::json ComparisonJson(const Comparison& comparison, bool with_points);

// "eval_accuracy of 3 jobs (higher is better)", then JOB, NAME, STATE, STEPS, FINAL, BEST,
// BEST STEP and the differing settings ("-" where a job lacks one), or a line saying the jobs'
// settings are the same.
void PrintComparison(std::ostream& out, const Comparison& comparison, bool color);

}  // namespace dtrain::cli
