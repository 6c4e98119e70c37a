#include "daemon/server/sweep_views.h"

#include <cmath>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "config/job_layout.h"
#include "daemon/server/sweep_driver.h"
#include "daemon/store/job_views.h"

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

int TrialLeadRank(const config::SweepLoadResult* generated, std::int64_t trial) {
  if (generated == nullptr || trial < 0 ||
      trial >= static_cast<std::int64_t>(generated->trials.size())) {
    return 0;
  }
  return config::LeadRank(generated->trials[static_cast<std::size_t>(trial)].job.cluster);
}

namespace {

// What a trial's row holds of its values, as the TRIAL's "parameters".
json ParametersJson(const config::Trial& trial) { return json::parse(TrialParametersJson(trial)); }

// The TRIAL objects of every trial of the sweep, by index (plain function: it reads the store).
// `generated`: the trials as the sweep file draws them (their values and lead ranks), when it
// still loads.
json TrialsJson(store::Store& store, const store::SweepRecord& sweep,
                const std::vector<store::SweepTrialRecord>& rows,
                const config::SweepLoadResult* generated) {
  json trials = json::array();
  auto row = rows.begin();
  for (std::int64_t i = 0; i < sweep.trials; ++i) {
    const config::ResolvedTrial* trial =
        generated != nullptr && i < static_cast<std::int64_t>(generated->trials.size())
            ? &generated->trials[static_cast<std::size_t>(i)]
            : nullptr;
    json t = {{"trial", i},        {"job", nullptr}, {"state", "not started"},     {"steps", 0},
              {"metric", nullptr}, {"reason", ""},   {"parameters", json::array()}};
    if (trial != nullptr) t["parameters"] = ParametersJson(trial->trial);
    while (row != rows.end() && row->trial < i) ++row;
    if (row != rows.end() && row->trial == i) {
      t["parameters"] = json::parse(row->parameters, nullptr, false);
      if (!row->job) {
        t["state"] = "removed";
      } else if (Result<json> job = store::StoredJobJson(store, *row->job, false); job.ok()) {
        t["job"] = *row->job;
        t["state"] = job.value()["state"];
        t["steps"] = job.value()["step"];
        t["reason"] = job.value()["reason"];
        const std::optional<double> metric =
            store::FinalMetric(store, *row->job, TrialLeadRank(generated, i), sweep.metric);
        if (metric && std::isfinite(*metric)) t["metric"] = *metric;
      }
    }
    trials.push_back(std::move(t));
  }
  return trials;
}

// The best succeeded trial of `trials` (TrialsJson's) by the sweep's metric and goal; null
// while none succeeded with a value.
json BestJson(const store::SweepRecord& sweep, const json& trials) {
  const config::SweepGoal goal =
      sweep.goal == "min" ? config::SweepGoal::kMin : config::SweepGoal::kMax;
  const json* best = nullptr;
  for (const json& t : trials) {
    if (t["state"] != "succeeded" || t["metric"].is_null()) continue;
    if (best == nullptr ||
        config::Better(goal, t["metric"].get<double>(), (*best)["metric"].get<double>())) {
      best = &t;
    }
  }
  if (best == nullptr) return nullptr;
  return {{"trial", (*best)["trial"]}, {"job", (*best)["job"]}, {"metric", (*best)["metric"]}};
}

}  // namespace

Result<json> SweepStatusJson(store::Store& store, const store::SweepRecord& sweep,
                             const config::SweepLoadResult* generated) {
  Result<std::vector<store::SweepTrialRecord>> rows = store.SweepTrials(sweep.id);
  if (!rows.ok()) return rows.status();
  json trials = TrialsJson(store, sweep, rows.value(), generated);
  json reply = {{"sweep", SweepJson(sweep)}, {"best", BestJson(sweep, trials)}};
  reply["trials"] = std::move(trials);
  return reply;
}

}  // namespace dtrain::server
