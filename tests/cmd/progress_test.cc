// What the progress bar of `dtrain run` shows of the epoch: 1-based, never past the plan.
#include <boost/test/unit_test.hpp>

#include "cmd/progress.h"

namespace dtrain::cli {

BOOST_AUTO_TEST_SUITE(progress_bar)

BOOST_AUTO_TEST_CASE(the_epoch_shown_never_passes_the_planned_count) {
  BOOST_TEST(EpochShown(0, 1) == 1);
  BOOST_TEST(EpochShown(1, 1) == 1);  // after the last step of a one-epoch run: not "2/1"
  BOOST_TEST(EpochShown(2, 3) == 3);
  BOOST_TEST(EpochShown(3, 3) == 3);
  BOOST_TEST(EpochShown(7, 0) == 8);  // no epoch limit (train.steps): the epoch it is in
}

BOOST_AUTO_TEST_SUITE_END()

}  // namespace dtrain::cli
