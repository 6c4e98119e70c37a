// A sweep's leaderboard: its trials' outcomes ranked by the sweep's metric, as one JSON object.
// The one source of truth for it: `dtrain sweep run` builds it from the trials it ran, `dtrain
// sweep status --json` and the dashboard's sweep page (dashboard_views.h) from a sweep_status
// reply (control_protocol.md, "Sweeps"), so that every view ranks and shows the same rows.
//
//   std::vector<TrialOutcome> board = Ranked(outcomes, sweep.goal);
//   nlohmann::json out = BoardJson(sweep, board, db);
//   nlohmann::json same = StatusBoardJson(reply, id);   // what `sweep status --json` prints
//
// Pure functions.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "config/sweep_file.h"

namespace dtrain::store {

struct TrialOutcome {
  config::Trial trial;
  std::int64_t job = 0;          // the trial's job in the store; 0: not run
  std::string state;             // the job's state ("succeeded", "failed", ...), or "not run"
  std::int64_t steps = 0;        // steps trained
  std::optional<double> metric;  // the sweep's metric: the trial's last value (ASHA: at its rung)
  std::string reason;            // why the job ended
  int rung = -1;                 // ASHA: the highest rung the trial completed (from 0); else -1
};

// The trials in config::RanksBefore's order (with a metric first; ASHA: the highest rung first;
// then best first by `goal`); equal ones in trial order.
std::vector<TrialOutcome> Ranked(std::vector<TrialOutcome> outcomes, config::SweepGoal goal);

// {"sweep", "method", "metric", "goal", "db", "best": {"trial", "job"} or null, "trials": [{
// "trial", "job", "state", "steps", "metric" (null when none), "reason", "parameters": {KEY:
// VALUE}}]} with the trials as ranked; an ASHA sweep's trials also have "rung" (null: none
// completed) and the board "rungs": [steps, ...].
nlohmann::json BoardJson(const config::SweepSpec& sweep, const std::vector<TrialOutcome>& ranked,
                         const std::string& db);

// A TRIAL of a sweep_status reply as an outcome, and the sweep as the board shows it (its SWEEP
// object's method, metric, goal and ASHA's rungs, the parameters' keys of the first trial).
TrialOutcome OutcomeOf(const nlohmann::json& trial);
config::SweepSpec SpecOf(const nlohmann::json& sweep, const std::vector<TrialOutcome>& outcomes);

// What `dtrain sweep status ID --json` prints for a sweep_status reply (`reply`: {"sweep",
// "trials", "best"}): BoardJson without "db", the trials ranked, with "id", "state", "reason"
// and the reply's "best".
nlohmann::json StatusBoardJson(const nlohmann::json& reply, std::int64_t id);

}  // namespace dtrain::store
