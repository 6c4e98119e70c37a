// The sweep driver's next action (daemon/server/sweep_standing.h, NextSweepAction), for every
// method from the trials' standings alone: grid and random start the lowest index without a
// row, then wait while a trial runs, then are done; ASHA takes config::NextAshaAction's action.
// So a daemon that restarts with any set of rows neither repeats a trial nor skips one.
#include <boost/test/unit_test.hpp>
#include <vector>

#include "daemon/server/sweep_driver.h"
#include "daemon/server/sweep_standing.h"

namespace dtrain::server {
namespace next_sweep_action_test {

using Kind = config::AshaAction::Kind;

std::vector<TrialStanding> Rows(std::vector<std::int64_t> indexes) {
  std::vector<TrialStanding> rows;
  for (const std::int64_t i : indexes) {
    TrialStanding t;
    t.trial = i;
    t.job = 100 + i;
    rows.push_back(t);
  }
  return rows;
}

BOOST_AUTO_TEST_SUITE(next_sweep_action)

BOOST_AUTO_TEST_CASE(grid_starts_the_lowest_index_without_a_row_then_waits_then_is_done) {
  config::SweepSpec grid;
  grid.method = config::SweepMethod::kGrid;
  BOOST_TEST((NextSweepAction(grid, 4, Rows({})) == config::AshaAction{Kind::kStart, 0, -1, 0}));
  BOOST_TEST(NextSweepAction(grid, 4, Rows({0})).trial == 1);
  BOOST_TEST(NextSweepAction(grid, 4, Rows({0, 1, 2})).trial == 3);
  // A trial whose job was removed keeps its row: it is not run again.
  std::vector<TrialStanding> removed = Rows({0, 1});
  removed[0].job.reset();
  BOOST_TEST(NextSweepAction(grid, 4, removed).trial == 2);
  std::vector<TrialStanding> all = Rows({0, 1, 2, 3});
  BOOST_TEST((NextSweepAction(grid, 4, all).kind == Kind::kDone));
  all[2].running = true;
  BOOST_TEST((NextSweepAction(grid, 4, all).kind == Kind::kWait));
  BOOST_TEST((NextSweepAction(grid, 0, Rows({})).kind == Kind::kDone));
}

BOOST_AUTO_TEST_CASE(asha_takes_the_rules_action_over_the_standings_facts) {
  config::SweepSpec asha;
  asha.method = config::SweepMethod::kAsha;
  asha.goal = config::SweepGoal::kMax;
  asha.asha = {2, 18, 3};  // rungs 2, 6, 18
  std::vector<TrialStanding> trials = Rows({0, 1, 2});
  for (std::size_t i = 0; i < trials.size(); ++i) {
    trials[i].asha.metrics = {0.5 + 0.1 * static_cast<double>(i)};
  }
  std::vector<config::AshaTrial> facts;
  for (const TrialStanding& t : trials) facts.push_back(t.asha);
  const config::AshaAction expected = config::NextAshaAction(asha.asha, asha.goal, 9, facts);
  BOOST_TEST((expected == config::AshaAction{Kind::kPromote, 2, 1, 6}));
  BOOST_TEST((NextSweepAction(asha, 9, trials) == expected));
  trials[2].asha.running = true;  // promoted: the next trial starts at rung 0
  BOOST_TEST((NextSweepAction(asha, 9, trials) == config::AshaAction{Kind::kStart, 3, 0, 2}));
  BOOST_TEST((NextSweepAction(asha, 3, trials).kind == Kind::kWait));
}

BOOST_AUTO_TEST_CASE(a_trial_row_stores_its_values) {
  const config::Trial trial{3,
                            {{"optimizer.lr", {"0.1", "0.1", "0.1"}},
                             {"model.hidden", {"[64, 32]", "[64,32]", "[64, 32]"}}}};
  BOOST_TEST(TrialParametersJson(trial) ==
             R"([{"json":"0.1","key":"optimizer.lr","shown":"0.1","toml":"0.1"},)"
             R"({"json":"[64,32]","key":"model.hidden","shown":"[64, 32]","toml":"[64, 32]"}])");
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace next_sweep_action_test
}  // namespace dtrain::server
