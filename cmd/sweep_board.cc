#include "cmd/sweep_board.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cmd/terminal.h"
#include "cmd/text_table.h"
#include "config/job_layout.h"
#include "daemon/store/job_views.h"

namespace dtrain::cli {
namespace {

std::string_view StateColor(const std::string& state) {
  return state == "succeeded" ? kGreen : state == "failed" ? kRed : std::string_view();
}

std::string MetricText(const std::optional<double>& metric) {
  if (!metric) return "-";
  char text[32];
  std::snprintf(text, sizeof text, "%.4f", *metric);
  return text;
}

}  // namespace

std::vector<TrialOutcome> Ranked(std::vector<TrialOutcome> outcomes, config::SweepGoal goal) {
  std::stable_sort(outcomes.begin(), outcomes.end(),
                   [goal](const TrialOutcome& a, const TrialOutcome& b) {
                     if (a.metric.has_value() != b.metric.has_value()) return a.metric.has_value();
                     if (!a.metric) return false;
                     return config::Better(goal, *a.metric, *b.metric);
                   });
  return outcomes;
}

nlohmann::json BoardJson(const config::SweepSpec& sweep, const std::vector<TrialOutcome>& ranked,
                         const std::string& db) {
  nlohmann::json trials = nlohmann::json::array();
  for (const TrialOutcome& t : ranked) {
    nlohmann::json parameters = nlohmann::json::object();
    for (const config::TrialParameter& p : t.trial.parameters) {
      parameters[p.key] = nlohmann::json::parse(p.value.json);
    }
    nlohmann::json metric = nullptr;
    if (t.metric && std::isfinite(*t.metric)) metric = *t.metric;
    trials.push_back({{"trial", t.trial.index},
                      {"job", t.job},
                      {"state", t.state},
                      {"steps", t.steps},
                      {"metric", metric},
                      {"reason", t.reason},
                      {"parameters", parameters}});
  }
  nlohmann::json best = nullptr;
  if (!ranked.empty() && ranked.front().metric) {
    best = {{"trial", ranked.front().trial.index}, {"job", ranked.front().job}};
  }
  return {{"sweep", sweep.path},
          {"method", config::SweepMethodName(sweep.method)},
          {"metric", sweep.metric},
          {"goal", config::SweepGoalName(sweep.goal)},
          {"db", db},
          {"best", best},
          {"trials", trials}};
}

void PrintBoard(std::ostream& out, const config::SweepSpec& sweep,
                const std::vector<TrialOutcome>& ranked, bool color) {
  std::vector<std::string> header = {"RANK", "TRIAL", "JOB", "STATE", "STEPS", sweep.metric};
  std::vector<bool> right = {true, true, true, false, true, true};
  for (const config::SweepParameter& p : sweep.parameters) {
    header.push_back(p.key);
    right.push_back(false);
  }
  TextTable table(std::move(header), std::move(right));
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    const TrialOutcome& t = ranked[i];
    std::vector<TextCell> row = {{t.metric ? std::to_string(i + 1) : "-"},
                                 {std::to_string(t.trial.index)},
                                 {t.job > 0 ? std::to_string(t.job) : "-"},
                                 {t.state, StateColor(t.state)},
                                 {std::to_string(t.steps)},
                                 {MetricText(t.metric)}};
    for (const config::TrialParameter& p : t.trial.parameters) row.push_back({p.value.shown});
    table.AddRow(std::move(row));
  }
  table.Print(out, color);
}

std::optional<double> FinalMetric(store::Store& store, std::int64_t job_id,
                                  const config::JobConfig& job, const std::string& metric) {
  return store::FinalMetric(store, job_id, config::LeadRank(job.cluster), metric);
}

}  // namespace dtrain::cli
