// The sweep driver's choice of the next trial (daemon/server/sweep_driver.h, NextTrial): from the
// trial rows alone, the lowest index without one, nothing once every trial has one; so that a
// daemon that restarts with any set of rows neither repeats a trial nor skips one.
#include <boost/test/unit_test.hpp>
#include <vector>

#include "daemon/server/sweep_driver.h"

namespace dtrain::server {
namespace {

std::vector<store::SweepTrialRecord> Rows(std::vector<std::int64_t> indexes) {
  std::vector<store::SweepTrialRecord> rows;
  for (const std::int64_t i : indexes) rows.push_back({1, i, 100 + i, "[]"});
  return rows;
}

BOOST_AUTO_TEST_SUITE(next_trial)

BOOST_AUTO_TEST_CASE(the_lowest_index_without_a_row_comes_next) {
  store::SweepRecord sweep;
  sweep.id = 1;
  sweep.trials = 4;
  BOOST_TEST(NextTrial(sweep, Rows({})).value_or(-1) == 0);
  BOOST_TEST(NextTrial(sweep, Rows({0})).value_or(-1) == 1);
  BOOST_TEST(NextTrial(sweep, Rows({0, 1, 2})).value_or(-1) == 3);
  BOOST_TEST(!NextTrial(sweep, Rows({0, 1, 2, 3})).has_value());
  // A trial whose job was removed keeps its row: it is not run again.
  std::vector<store::SweepTrialRecord> removed = Rows({0, 1});
  removed[0].job.reset();
  BOOST_TEST(NextTrial(sweep, removed).value_or(-1) == 2);
  sweep.trials = 0;
  BOOST_TEST(!NextTrial(sweep, Rows({})).has_value());
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

}  // namespace
}  // namespace dtrain::server
