// StepTimes (core/train/step_times.h): nearest-rank percentiles of a window's step times, over
// its last StepTimes::kKept steps at most, and nothing once cleared.
#include "core/train/step_times.h"

#include <boost/test/unit_test.hpp>

namespace dtrain::train {
namespace step_times_test {

BOOST_AUTO_TEST_SUITE(step_times)

BOOST_AUTO_TEST_CASE(percentiles_are_nearest_ranks_of_the_steps_in_any_order) {
  StepTimes times;
  BOOST_TEST(times.Percentile(50) == 0.0);
  // 1..20 in a scrambled order: the median is the 10th value, the 95th percentile the 19th.
  for (int i = 0; i < 20; ++i) times.Add(static_cast<double>((i * 7) % 20 + 1));
  BOOST_TEST(times.Percentile(50) == 10.0);
  BOOST_TEST(times.Percentile(95) == 19.0);
  BOOST_TEST(times.Percentile(100) == 20.0);
  times.Clear();
  BOOST_TEST(times.Percentile(95) == 0.0);
  times.Add(0.25);
  BOOST_TEST(times.Percentile(50) == 0.25);
}

BOOST_AUTO_TEST_CASE(a_long_window_keeps_only_its_last_steps) {
  StepTimes times;
  for (std::size_t i = 0; i < StepTimes::kKept; ++i) times.Add(100.0);  // slow, then forgotten
  for (std::size_t i = 0; i < StepTimes::kKept; ++i) times.Add(1.0);
  BOOST_TEST(times.Percentile(100) == 1.0);
  times.Add(5.0);  // one slow step among the kept: the maximum, not the 95th percentile
  BOOST_TEST(times.Percentile(100) == 5.0);
  BOOST_TEST(times.Percentile(95) == 1.0);
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace step_times_test
}  // namespace dtrain::train
