// A sweep's leaderboard: its trials' outcomes ranked by the sweep's metric, printed as a table
// for people or as one JSON object. `dtrain sweep run` prints it when its trials end, and
// `dtrain sweep status` for a sweep the daemon runs (from its reply).
//
//   std::vector<TrialOutcome> board = Ranked(outcomes, sweep.goal);
//   PrintBoard(std::cout, sweep, board, ColorOnStdout());
//
// Ranked and BoardJson are pure; one thread at a time per stream.
#pragma once

#include <cstdint>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "config/sweep_file.h"
#include "daemon/store/store.h"

namespace dtrain::cli {

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

// RANK, TRIAL, JOB, STATE, STEPS (ASHA: then RUNG), the metric, then one column per parameter.
void PrintBoard(std::ostream& out, const config::SweepSpec& sweep,
                const std::vector<TrialOutcome>& ranked, bool color);

// The last value of `metric` recorded at a step <= `up_to_step` by the job's lead replica
// (config::LeadRank), or by any worker when the lead recorded none; nothing when none did.
std::optional<double> FinalMetric(
    store::Store& store, std::int64_t job_id, const config::JobConfig& job,
    const std::string& metric, std::int64_t up_to_step = std::numeric_limits<std::int64_t>::max());

}  // namespace dtrain::cli
