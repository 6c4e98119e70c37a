#include "cmd/sweep_board.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cmd/terminal.h"
#include "cmd/text_table.h"
#include "config/job_layout.h"
#include "config/sweep_asha.h"
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
                     return config::RanksBefore(goal, {a.rung, a.metric}, {b.rung, b.metric});
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
    nlohmann::json trial = {{"trial", t.trial.index},  {"job", t.job},     {"state", t.state},
                            {"steps", t.steps},        {"metric", metric}, {"reason", t.reason},
                            {"parameters", parameters}};
    if (sweep.method == config::SweepMethod::kAsha) {
      trial["rung"] = t.rung >= 0 ? nlohmann::json(t.rung) : nlohmann::json(nullptr);
    }
    trials.push_back(std::move(trial));
  }
  nlohmann::json best = nullptr;
  if (!ranked.empty() && ranked.front().metric) {
    best = {{"trial", ranked.front().trial.index}, {"job", ranked.front().job}};
  }
  nlohmann::json board = {{"sweep", sweep.path},
                          {"method", config::SweepMethodName(sweep.method)},
                          {"metric", sweep.metric},
                          {"goal", config::SweepGoalName(sweep.goal)},
                          {"db", db},
                          {"best", best},
                          {"trials", trials}};
  if (sweep.method == config::SweepMethod::kAsha) board["rungs"] = config::AshaRungs(sweep.asha);
  return board;
}

void PrintBoard(std::ostream& out, const config::SweepSpec& sweep,
                const std::vector<TrialOutcome>& ranked, bool color) {
  const bool asha = sweep.method == config::SweepMethod::kAsha;
  std::vector<std::string> header = {"RANK", "TRIAL", "JOB", "STATE", "STEPS"};
  std::vector<bool> right = {true, true, true, false, true};
  if (asha) {
    header.push_back("RUNG");
    right.push_back(true);
  }
  header.push_back(sweep.metric);
  right.push_back(true);
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
                                 {std::to_string(t.steps)}};
    if (asha) row.push_back({t.rung >= 0 ? std::to_string(t.rung) : "-"});
    row.push_back({MetricText(t.metric)});
    for (const config::TrialParameter& p : t.trial.parameters) row.push_back({p.value.shown});
    table.AddRow(std::move(row));
  }
  table.Print(out, color);
}

std::optional<double> FinalMetric(store::Store& store, std::int64_t job_id,
                                  const config::JobConfig& job, const std::string& metric,
                                  std::int64_t up_to_step) {
  return store::FinalMetric(store, job_id, config::LeadRank(job.cluster), metric, up_to_step);
}

}  // namespace dtrain::cli
