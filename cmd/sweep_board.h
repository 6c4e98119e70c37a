// A sweep's leaderboard printed as a table for people (BoardJson: as one JSON object). `dtrain
// sweep run` prints it when its trials end, and `dtrain sweep status` for a sweep the daemon runs
// (from its reply).
//
//   std::vector<TrialOutcome> board = Ranked(outcomes, sweep.goal);
//   PrintBoard(std::cout, sweep, board, ColorOnStdout());
//
// One thread at a time per stream.
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
#include "daemon/store/sweep_board.h"

namespace dtrain::cli {

// The board itself (its rows, ranking and JSON) is daemon/store/sweep_board.h's, shared with the
// daemon's dashboard.
using store::BoardJson;
using store::Ranked;
using store::TrialOutcome;

// RANK, TRIAL, JOB, STATE, STEPS (ASHA: then RUNG), the metric, then one column per parameter.
void PrintBoard(std::ostream& out, const config::SweepSpec& sweep,
                const std::vector<TrialOutcome>& ranked, bool color);

// The last value of `metric` recorded at a step <= `up_to_step` by the job's lead replica
// (config::LeadRank), or by any worker when the lead recorded none; nothing when none did.
std::optional<double> FinalMetric(
    store::Store& store, std::int64_t job_id, const config::JobConfig& job,
    const std::string& metric, std::int64_t up_to_step = std::numeric_limits<std::int64_t>::max());

}  // namespace dtrain::cli
