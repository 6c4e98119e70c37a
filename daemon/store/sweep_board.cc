#include "daemon/store/sweep_board.h"

#include <algorithm>
#include <cmath>

#include "config/sweep_asha.h"

namespace dtrain::store {

using json = nlohmann::json;

std::vector<TrialOutcome> Ranked(std::vector<TrialOutcome> outcomes, config::SweepGoal goal) {
  std::stable_sort(outcomes.begin(), outcomes.end(),
                   [goal](const TrialOutcome& a, const TrialOutcome& b) {
                     return config::RanksBefore(goal, {a.rung, a.metric}, {b.rung, b.metric});
                   });
  return outcomes;
}

json BoardJson(const config::SweepSpec& sweep, const std::vector<TrialOutcome>& ranked,
               const std::string& db) {
  json trials = json::array();
  for (const TrialOutcome& t : ranked) {
    json parameters = json::object();
    for (const config::TrialParameter& p : t.trial.parameters) {
      parameters[p.key] = json::parse(p.value.json);
    }
    json metric = nullptr;
    if (t.metric && std::isfinite(*t.metric)) metric = *t.metric;
    json trial = {{"trial", t.trial.index},  {"job", t.job},     {"state", t.state},
                  {"steps", t.steps},        {"metric", metric}, {"reason", t.reason},
                  {"parameters", parameters}};
    if (sweep.method == config::SweepMethod::kAsha) {
      trial["rung"] = t.rung >= 0 ? json(t.rung) : json(nullptr);
    }
    trials.push_back(std::move(trial));
  }
  json best = nullptr;
  if (!ranked.empty() && ranked.front().metric) {
    best = {{"trial", ranked.front().trial.index}, {"job", ranked.front().job}};
  }
  json board = {{"sweep", sweep.path},
                {"method", config::SweepMethodName(sweep.method)},
                {"metric", sweep.metric},
                {"goal", config::SweepGoalName(sweep.goal)},
                {"db", db},
                {"best", best},
                {"trials", trials}};
  if (sweep.method == config::SweepMethod::kAsha) board["rungs"] = config::AshaRungs(sweep.asha);
  return board;
}

TrialOutcome OutcomeOf(const json& t) {
  TrialOutcome outcome;
  outcome.trial.index = t["trial"].get<std::int64_t>();
  for (const json& p : t["parameters"]) {
    outcome.trial.parameters.push_back({p["key"].get<std::string>(),
                                        {p["toml"].get<std::string>(), p["json"].get<std::string>(),
                                         p["shown"].get<std::string>()}});
  }
  outcome.job = t["job"].is_null() ? 0 : t["job"].get<std::int64_t>();
  outcome.state = t["state"].get<std::string>();
  outcome.steps = t["steps"].get<std::int64_t>();
  if (!t["metric"].is_null()) outcome.metric = t["metric"].get<double>();
  outcome.reason = t["reason"].get<std::string>();
  if (t.contains("rung") && !t["rung"].is_null()) outcome.rung = t["rung"].get<int>();
  return outcome;
}

config::SweepSpec SpecOf(const json& sweep, const std::vector<TrialOutcome>& outcomes) {
  config::SweepSpec spec;
  spec.path = sweep["source"].get<std::string>();
  const std::string method = sweep["method"].get<std::string>();
  spec.method = method == "grid"   ? config::SweepMethod::kGrid
                : method == "asha" ? config::SweepMethod::kAsha
                                   : config::SweepMethod::kRandom;
  spec.metric = sweep["metric"].get<std::string>();
  spec.goal = sweep["goal"] == "min" ? config::SweepGoal::kMin : config::SweepGoal::kMax;
  if (sweep.contains("asha")) {
    spec.asha = {sweep["asha"]["min_steps"].get<std::int64_t>(),
                 sweep["asha"]["max_steps"].get<std::int64_t>(),
                 sweep["asha"]["reduction_factor"].get<std::int64_t>()};
  }
  if (!outcomes.empty()) {
    for (const config::TrialParameter& p : outcomes.front().trial.parameters) {
      config::SweepParameter parameter;
      parameter.key = p.key;
      spec.parameters.push_back(std::move(parameter));
    }
  }
  return spec;
}

json StatusBoardJson(const json& reply, std::int64_t id) {
  const json& sweep = reply["sweep"];
  std::vector<TrialOutcome> outcomes;
  for (const json& t : reply["trials"]) outcomes.push_back(OutcomeOf(t));
  const config::SweepSpec spec = SpecOf(sweep, outcomes);
  json out = BoardJson(spec, Ranked(std::move(outcomes), spec.goal), "");
  out.erase("db");
  out["id"] = id;
  out["state"] = sweep["state"];
  out["reason"] = sweep["reason"];
  out["best"] = reply["best"];
  return out;
}

}  // namespace dtrain::store
