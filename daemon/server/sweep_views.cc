#include "daemon/server/sweep_views.h"

#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/sweep_asha.h"
#include "daemon/server/sweep_driver.h"
#include "daemon/server/sweep_standing.h"

namespace dtrain::server {

using json = nlohmann::json;

json SweepJson(const store::SweepRecord& s) {
  return {{"id", s.id},
          {"name", s.name},
          {"owner", s.owner_uid},
          {"source", s.source},
          {"method", s.method},
          {"metric", s.metric},
          {"goal", s.goal},
          {"trials", s.trials},
          {"max_concurrent", s.max_concurrent},
          {"state", store::SweepStateName(s.state)},
          {"reason", s.reason},
          {"created", s.created},
          {"updated", s.updated}};
}

namespace {

// What a trial's row holds of its values, as the TRIAL's "parameters".
json ParametersJson(const config::Trial& trial) { return json::parse(TrialParametersJson(trial)); }

// The TRIAL objects of every trial of the sweep, by index, from the rows (their values) and the
// standings of those with a row (one per row, in the same order). `generated`: the trials as the
// sweep file draws them (the values of those without a row), when it still loads.
json TrialsJson(const store::SweepRecord& sweep, const std::vector<store::SweepTrialRecord>& rows,
                const std::vector<TrialStanding>& standings,
                const config::SweepLoadResult* generated) {
  const bool asha = generated != nullptr && generated->sweep->method == config::SweepMethod::kAsha;
  json trials = json::array();
  auto standing = standings.begin();
  auto row = rows.begin();
  for (std::int64_t i = 0; i < sweep.trials; ++i) {
    json t = {{"trial", i},        {"job", nullptr}, {"state", "not started"},     {"steps", 0},
              {"metric", nullptr}, {"reason", ""},   {"parameters", json::array()}};
    if (generated != nullptr && i < static_cast<std::int64_t>(generated->trials.size())) {
      t["parameters"] = ParametersJson(generated->trials[static_cast<std::size_t>(i)].trial);
    }
    if (asha) t["rung"] = nullptr;
    while (row != rows.end() && row->trial < i) ++row;
    if (row != rows.end() && row->trial == i) {
      t["parameters"] = json::parse(row->parameters, nullptr, false);
    }
    while (standing != standings.end() && standing->trial < i) ++standing;
    if (standing != standings.end() && standing->trial == i) {
      t["state"] = standing->state;
      if (standing->job) {
        t["job"] = *standing->job;
        t["steps"] = standing->steps;
        t["reason"] = standing->reason;
        if (standing->metric && std::isfinite(*standing->metric)) t["metric"] = *standing->metric;
        if (asha && standing->rung >= 0) t["rung"] = standing->rung;
      }
    }
    trials.push_back(std::move(t));
  }
  return trials;
}

// The trial `sweep best` names: the first of the succeeded trials with a metric in the
// leaderboard's order (config::RanksBefore: ASHA's highest rung reached first, then the best
// metric); null while none succeeded with a value.
json BestJson(const store::SweepRecord& sweep, const json& trials) {
  const config::SweepGoal goal =
      sweep.goal == "min" ? config::SweepGoal::kMin : config::SweepGoal::kMax;
  auto score = [](const json& t) {
    return config::TrialScore{
        t.contains("rung") && !t["rung"].is_null() ? t["rung"].get<int>() : -1,
        t["metric"].get<double>()};
  };
  const json* best = nullptr;
  for (const json& t : trials) {
    if (t["state"] != "succeeded" || t["metric"].is_null()) continue;
    if (best == nullptr || config::RanksBefore(goal, score(t), score(*best))) best = &t;
  }
  if (best == nullptr) return nullptr;
  return {{"trial", (*best)["trial"]}, {"job", (*best)["job"]}, {"metric", (*best)["metric"]}};
}

}  // namespace

Result<json> SweepStatusJson(store::Store& store, const store::SweepRecord& sweep,
                             const config::SweepLoadResult* generated, TrialStandingCache* cache) {
  Result<std::vector<store::SweepTrialRecord>> rows = store.SweepTrials(sweep.id);
  if (!rows.ok()) return rows.status();
  Result<std::vector<TrialStanding>> standings =
      ReadStandings(store, sweep, generated, rows.value(), cache);
  if (!standings.ok()) return standings.status();
  json trials = TrialsJson(sweep, rows.value(), standings.value(), generated);
  json reply = {{"sweep", SweepJson(sweep)}, {"best", BestJson(sweep, trials)}};
  if (generated != nullptr && generated->sweep->method == config::SweepMethod::kAsha) {
    const config::AshaOptions& asha = generated->sweep->asha;
    reply["sweep"]["asha"] = {{"min_steps", asha.min_steps},
                              {"max_steps", asha.max_steps},
                              {"reduction_factor", asha.reduction_factor},
                              {"rungs", config::AshaRungs(asha)}};
  }
  reply["trials"] = std::move(trials);
  return reply;
}

}  // namespace dtrain::server
