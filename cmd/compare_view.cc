#include "cmd/compare_view.h"

#include "cmd/human.h"
#include "cmd/terminal.h"
#include "cmd/text_table.h"
#include "daemon/store/metric_value.h"

namespace dtrain::cli {
namespace {

std::string_view StateColor(const std::string& state) {
  return state == "succeeded" ? kGreen : state == "failed" ? kRed : std::string_view();
}

std::string Shown(const std::optional<config::ParameterValue>& value) {
  return value ? value->toml : "-";
}

nlohmann::json JsonOf(const std::optional<config::ParameterValue>& value) {
  return value ? nlohmann::json::parse(value->json) : nlohmann::json();
}

std::string StepText(double step) { return std::to_string(static_cast<std::int64_t>(step)); }

}  // namespace

CurveSummary Summarize(const Curve& curve, config::SweepGoal goal) {
  CurveSummary summary;
  for (const auto& point : curve) {
    summary.final_point = point;
    if (!summary.best_point || config::Better(goal, point.second, summary.best_point->second)) {
      summary.best_point = point;
    }
  }
  return summary;
}

bool ShownApart(const std::string& key) { return key == "name"; }

nlohmann::json ComparisonJson(const Comparison& comparison, bool with_points) {
  nlohmann::json jobs = nlohmann::json::array();
  for (const ComparedJob& job : comparison.jobs) {
    const CurveSummary s = Summarize(job.curve, comparison.goal);
    nlohmann::json j = {
        {"id", job.id},
        {"name", job.name},
        {"state", job.state},
        {"steps", job.steps},
        {"final", s.final_point ? store::MetricValueJson(s.final_point->second) : nullptr},
        {"best", s.best_point ? store::MetricValueJson(s.best_point->second) : nullptr},
        {"best_step",
         s.best_point ? nlohmann::json(static_cast<std::int64_t>(s.best_point->first)) : nullptr}};
    if (with_points) {
      nlohmann::json points = nlohmann::json::array();
      for (const auto& [step, value] : job.curve) {
        points.push_back({static_cast<std::int64_t>(step), store::MetricValueJson(value)});
      }
      j["points"] = std::move(points);
    }
    jobs.push_back(std::move(j));
  }
  nlohmann::json differing = nlohmann::json::object();
  for (const auto& [key, values] : comparison.differing) {
    nlohmann::json per_job = nlohmann::json::array();
    for (const auto& value : values) per_job.push_back(JsonOf(value));
    differing[key] = std::move(per_job);
  }
  return {{"metric", comparison.metric},
          {"goal", config::SweepGoalName(comparison.goal)},
          {"jobs", std::move(jobs)},
          {"differing", std::move(differing)}};
}

void PrintComparison(std::ostream& out, const Comparison& comparison, bool color) {
  out << comparison.metric << " of " << comparison.jobs.size() << " jobs ("
      << (comparison.goal == config::SweepGoal::kMax ? "higher" : "lower") << " is better)\n";
  const bool inline_settings = comparison.differing.size() <= kMaxSettingColumns;
  std::vector<std::string> header = {"JOB", "NAME", "STATE", "STEPS", "FINAL", "BEST", "BEST STEP"};
  std::vector<bool> right = {true, false, false, true, true, true, true};
  if (inline_settings) {
    for (const auto& entry : comparison.differing) {
      header.push_back(entry.first);
      right.push_back(false);
    }
  }
  TextTable jobs(std::move(header), std::move(right));
  for (std::size_t i = 0; i < comparison.jobs.size(); ++i) {
    const ComparedJob& job = comparison.jobs[i];
    const CurveSummary s = Summarize(job.curve, comparison.goal);
    std::vector<TextCell> row = {
        {std::to_string(job.id)},
        {job.name},
        {job.state, StateColor(job.state)},
        {std::to_string(job.steps)},
        {s.final_point ? FormatMetric(comparison.metric, s.final_point->second) : "-"},
        {s.best_point ? FormatMetric(comparison.metric, s.best_point->second) : "-"},
        {s.best_point ? StepText(s.best_point->first) : "-"}};
    if (inline_settings) {
      for (const auto& entry : comparison.differing) row.push_back({Shown(entry.second[i])});
    }
    jobs.AddRow(std::move(row));
  }
  jobs.Print(out, color);
  if (comparison.differing.empty()) {
    out << "\nthe jobs' settings are the same\n";
    return;
  }
  if (inline_settings) return;
  std::vector<std::string> header2 = {"SETTING"};
  std::vector<bool> right2 = {false};
  for (const ComparedJob& job : comparison.jobs) {
    header2.push_back("JOB " + std::to_string(job.id));
    right2.push_back(false);
  }
  TextTable settings(std::move(header2), std::move(right2));
  for (const auto& [key, values] : comparison.differing) {
    std::vector<TextCell> row = {{key}};
    for (const auto& value : values) row.push_back({Shown(value)});
    settings.AddRow(std::move(row));
  }
  out << '\n';
  settings.Print(out, color);
}

}  // namespace dtrain::cli
