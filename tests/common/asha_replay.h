// ASHA's rule replayed over metrics recorded in advance: the rung each trial reaches when the
// rule's actions are taken one at a time, as a sweep of max_concurrent 1 takes them. Tests of
// `dtrain sweep run` and of the daemon's ASHA sweeps compare the rungs their sweeps reached with
// it.
//
//   std::vector<int> reached = ReplayedRungs(options, config::SweepGoal::kMin, metric);
//
// `metric[i][k]`: trial i's metric at rung k, for every rung it reached; a replay that promotes a
// trial past its recorded rungs fails the test (the sweep stopped where the rule goes on).
#pragma once

#include <boost/test/unit_test.hpp>
#include <cstddef>
#include <vector>

#include "config/sweep_asha.h"

namespace dtrain::testing {

// Trial i's highest rung reached in the replay (-1: never started).
inline std::vector<int> ReplayedRungs(const config::AshaOptions& options, config::SweepGoal goal,
                                      const std::vector<std::vector<double>>& metric) {
  std::vector<config::AshaTrial> replay;
  std::vector<int> reached(metric.size(), -1);
  const auto trials = static_cast<std::int64_t>(metric.size());
  for (int guard = 0; guard < 100; ++guard) {
    const config::AshaAction next = config::NextAshaAction(options, goal, trials, replay);
    if (next.kind == config::AshaAction::Kind::kStart) replay.emplace_back();
    if (next.kind != config::AshaAction::Kind::kStart &&
        next.kind != config::AshaAction::Kind::kPromote) {
      break;
    }
    const auto i = static_cast<std::size_t>(next.trial);
    BOOST_REQUIRE_MESSAGE(
        next.rung < static_cast<int>(metric[i].size()),
        "the rule promotes trial " << i << " to rung " << next.rung << ", which the sweep did not");
    replay[i].metrics.push_back(metric[i][static_cast<std::size_t>(next.rung)]);
    reached[i] = next.rung;
  }
  return reached;
}

}  // namespace dtrain::testing
